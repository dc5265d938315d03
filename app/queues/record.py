"""The pool record: the bytes a waiting ticket is stored as, in one place with named fields.

A record is a header of little-endian doubles (HeaderField, in that order), then each player's
mu and sigma (two doubles each), then the latency of each region (a double each), then the
canonical attributes, a newline, the regions' names joined by tabs, a newline and the players'
JSON array. A record never changes while its ticket waits. Matchmaking reads the headers of a
whole pool with one np.frombuffer (store.py); the Lua scripts (scripts.py) read the fields they
need with struct.unpack, at offsets rendered from this module.

What a claim keeps so that a requeue can put its tickets back (KEPT_*) is laid out here too.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from enum import IntEnum

import numpy as np
import numpy.typing as npt

DOUBLE = "<f8"  # every number of a record: exact, no decimal text to write or parse


class HeaderField(IntEnum):
    """The header's doubles, by position."""

    ENQUEUED_AT = 0
    GROUP = 1  # app.matchmaking.pool.attribute_group of the attributes
    PLAYERS = 2
    MU_SUM = 3  # Σ mu of the players
    VAR_SUM = 4  # Σ sigma² of the players
    EXPIRES_AT = 5
    REGIONS = 6  # how many latencies follow the ratings


HEADER_DOUBLES = len(HeaderField)
HEADER_BYTES = 8 * HEADER_DOUBLES
PLAYER_BYTES = 16  # mu, sigma
REGION_BYTES = 8  # one latency in ms

# What the claim keeps per ticket for a requeue: the ticket's id, its record's length (uint32),
# the record, its hold's expiry text's length (a byte) and that text.
KEPT_ID_BYTES = 32
KEPT_LENGTH = "<I"
KEPT_LENGTH_BYTES = struct.calcsize(KEPT_LENGTH)


def byte_offset(field: HeaderField) -> int:
    """Where the field's double starts (0-based, as Python slices count)."""
    return 8 * field


def lua_position(field: HeaderField) -> int:
    """The field's position for Lua's struct.unpack, which counts from 1."""
    return byte_offset(field) + 1


def encode(
    header: bytes, ratings: bytes, latencies: Sequence[float], attributes: str, regions: Sequence[str],
    players: Sequence[str],
) -> bytes:  # fmt: skip
    """A record from its header's bytes (HEADER_BYTES, as headers_of reads them back), its
    players' (mu, sigma) doubles and the rest. Identifiers need no escaping in JSON; canonical
    attributes hold no raw newline; region names are identifiers (no tab, no newline)."""
    return (
        header
        + ratings
        + struct.pack(f"<{len(latencies)}d", *latencies)
        + (attributes + "\n" + "\t".join(regions) + '\n["' + '","'.join(players) + '"]').encode()
    )


def headers_of(records: Sequence[bytes]) -> npt.NDArray[np.float64]:
    """The headers of many records as one array, a row each, columns by HeaderField."""
    joined = b"".join(record[:HEADER_BYTES] for record in records)
    return np.frombuffer(joined, dtype=DOUBLE).reshape(-1, HEADER_DOUBLES)


def field_of(record: bytes, field: HeaderField) -> float:
    value: float = struct.unpack_from("<d", record, byte_offset(field))[0]
    return value


def latency_span(record: bytes, players: int, regions: int) -> tuple[int, int]:
    """Where the record's latency doubles lie: (start, end) byte offsets."""
    start = HEADER_BYTES + PLAYER_BYTES * players
    return start, start + REGION_BYTES * regions


def tail(record: bytes, players: int) -> list[bytes]:
    """The record's attributes, region names and players' JSON array, as bytes."""
    regions = int(field_of(record, HeaderField.REGIONS))
    return record[latency_span(record, players, regions)[1] :].split(b"\n", 2)


def kept(ticket_id: str, record: bytes, expiry_text: bytes) -> bytes:
    """One ticket of what a claim keeps for a requeue."""
    return (
        ticket_id.encode()
        + struct.pack(KEPT_LENGTH, len(record))
        + record
        + bytes([len(expiry_text)])
        + expiry_text
    )
