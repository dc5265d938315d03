"""The waiting tickets of a queue as columns, and matches as rows of them.

Forming matches reads every waiting ticket, so a queue hands the algorithms columns
(NumPy arrays, one row per ticket) rather than objects: what a ticket contributes to a
team's performance under TrueSkill's sum is its players' Σ mu and Σ sigma², and its size.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.matchmaking.avoid import clashing_rows
from app.matchmaking.latency import Latencies
from app.rating import Rating

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# Per player of a ticket, the roles they accept (names, in their order of preference).
TicketRoles = tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Ticket:
    ticket_id: str
    players: tuple[str, ...]
    ratings: tuple[Rating, ...]
    attributes: str  # canonical JSON: equal strings may share a match
    waited: float  # seconds
    latencies: tuple[tuple[str, float], ...] = ()  # (region, ms) pairs; none: fits every region
    roles: TicketRoles | None = None  # None: listed none (fits any role)
    avoid: tuple[str, ...] = ()  # players none of its players may meet

    @property
    def skill(self) -> float:
        return sum(r.mu for r in self.ratings) / len(self.ratings)


def canonical_attributes(attributes: Mapping[str, object]) -> str:
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def attribute_group(attributes: str) -> int:
    """A 48-bit digest of canonical attributes (exact in a float64): equal attributes, equal
    group. Two different attribute sets share a group with probability 2⁻⁴⁸, so a queue checks
    a match's attributes before it claims it."""
    return int.from_bytes(hashlib.blake2b(attributes.encode(), digest_size=6).digest(), "big")


@dataclass(frozen=True, slots=True)
class Pool:
    """Waiting tickets as parallel columns. Only tickets of one group may share a match."""

    ids: Sequence[str]
    size: IntArray  # players on the ticket (more than one: a party)
    mu: FloatArray  # Σ mu of its players
    var: FloatArray  # Σ sigma² of its players
    waited: FloatArray  # seconds in the queue
    group: IntArray
    latencies: Latencies | None = None  # None when no ticket lists latencies
    roles: Sequence[TicketRoles | None] | None = None  # per row; None when no ticket lists roles
    clashes: IntArray | None = None  # pairs of rows (a < b) whose tickets may not meet (avoid.py)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def of(cls, tickets: Sequence[Ticket]) -> Pool:
        groups: dict[str, int] = {}
        return cls(
            [t.ticket_id for t in tickets],
            np.array([len(t.ratings) for t in tickets], dtype=np.int64),
            np.array([sum(r.mu for r in t.ratings) for t in tickets], dtype=np.float64),
            np.array([sum(r.sigma * r.sigma for r in t.ratings) for t in tickets], dtype=np.float64),
            np.array([t.waited for t in tickets], dtype=np.float64),
            np.array([groups.setdefault(t.attributes, len(groups)) for t in tickets], dtype=np.int64),
            Latencies.of([t.latencies for t in tickets]),
            [t.roles for t in tickets] if any(t.roles is not None for t in tickets) else None,
            clashing_rows([t.players for t in tickets], [t.avoid for t in tickets]),
        )


@dataclass(frozen=True, slots=True)
class Match:
    """A match formed from a pool: its teams as pool rows, its quality and longest wait."""

    teams: tuple[tuple[int, ...], ...]
    quality: float
    longest_wait: float
    region: str | None = None  # under latencies: where it is to be played
    # Under roles: per row of `rows`, the role each of its ticket's players takes.
    roles: tuple[tuple[str, ...], ...] | None = None
    rows: tuple[int, ...] = field(init=False)  # every team's rows, in team order

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(row for team in self.teams for row in team))


def unmatched(rows: IntArray, matches: Sequence[Match]) -> IntArray:
    """The rows (in their order) that none of the matches took."""
    taken = np.fromiter((row for match in matches for row in match.rows), dtype=np.int64)
    left: IntArray = rows[~np.isin(rows, taken)]
    return left
