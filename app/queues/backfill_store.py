"""Backfills in Redis: each one's record, and the scripts that change it (store.py's layout).

A backfill is one field of mm:v4:{mode}:backfills: its record's JSON (Record). Every change
(a PUT, a fill) writes a whole new record with the version one up, through a script that first
checks the version it was computed from (BACKFILL_PUT, BACKFILL_CLAIM): a matchmaking call that
read an older record fills nothing. Under a ready check a fill waits in the record's `fills`
until its proposal settles; its state is read from the proposal itself (the done hashes), so a
decline needs no write here: a failed fill's slots are open again, and the next change of the
record drops it (an accepted one joins the roster then).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic_core

from app.infra.redis_client import RedisClient
from app.queues import record
from app.queues.record import HeaderField
from app.queues.scripts import BACKFILL_CLAIM, BACKFILL_PUT, reply_text, run
from app.queues.store import Keys, ProposalClaim, QueueStore, Render, Waiting, is_queue_id

Ratings = list[list[list[float]]]  # per team, per player: [mu, sigma]


@dataclass(frozen=True, slots=True)
class PendingFill:
    """A fill whose proposal's ready check runs: the players it adds to each team."""

    proposal_id: str
    teams: list[list[str]]
    ratings: Ratings


@dataclass(frozen=True, slots=True)
class Record:
    backfill_id: str
    version: int
    teams: list[list[str]]
    ratings: Ratings
    attributes: str  # canonical JSON
    region: str | None
    created_at: float
    expires_at: float
    fills: list[PendingFill] = field(default_factory=list)

    def to_json(self) -> bytes:
        # Fields by hand, in field order (as asdict wrote them): asdict deep-copies every
        # nested list first, a large part of a matchmaking call that claims hundreds of fills.
        # pydantic's serialiser rather than json.dumps: a call writes a record per fill, and
        # formats their ratings' floats several times faster (compact, as the scripts expect:
        # ERASE_BACKFILLS edits "teams" and "version" in the text).
        fills = [{"proposal_id": f.proposal_id, "teams": f.teams, "ratings": f.ratings} for f in self.fills]
        data = {
            "backfill_id": self.backfill_id,
            "version": self.version,
            "teams": self.teams,
            "ratings": self.ratings,
            "attributes": self.attributes,
            "region": self.region,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "fills": fills,
        }
        return pydantic_core.to_json(data)

    def with_roster(
        self, version: int, teams: list[list[str]], ratings: Ratings, fills: list[PendingFill]
    ) -> Record:
        """This backfill at another version and roster (dataclasses.replace, without its look
        at every field: a matchmaking call makes two per backfill)."""
        return Record(
            self.backfill_id,
            version,
            teams,
            ratings,
            self.attributes,
            self.region,
            self.created_at,
            self.expires_at,
            fills,
        )

    @classmethod
    def of(cls, text: Any) -> Record:
        data = pydantic_core.from_json(text)
        data["fills"] = [PendingFill(**fill) for fill in data.get("fills") or []]
        return cls(**data)

    def players(self) -> list[str]:
        """Everyone on the roster, pending fills' players too."""
        return [name for team in self.teams for name in team] + [
            name for fill in self.fills for team in fill.teams for name in team
        ]


class Refused(Exception):
    """BACKFILL_PUT's refusal: its code (unknown, stale, rostered, queued) and details."""

    def __init__(self, code: str, *details: str) -> None:
        super().__init__(code, *details)
        self.code = code
        self.details = details


class BackfillStore:
    """Redis commands and scripts for one mode's backfills."""

    def __init__(self, redis: RedisClient, mode: str) -> None:
        self.redis = redis
        self.keys = Keys(mode)

    async def put(self, backfill_id: str, now: float, expected: str, new: Record | None) -> None:
        """Create (expected "new"), replace or with `new` None delete a backfill, checking its
        version (expected "*": any). Raises Refused."""
        players = new.players() if new is not None else []
        keys = [self.keys.pool, self.keys.holders, self.keys.backfills, self.keys.rostered]
        args: list[str | bytes | int] = [
            backfill_id,
            repr(now),
            expected,
            new.to_json() if new is not None else "",
            len(players),
            *players,
        ]
        reply = [reply_text(part) for part in await run(self.redis, BACKFILL_PUT, keys, args)]
        if reply[0] != "ok":
            raise Refused(*reply)

    async def get(self, backfill_id: str, now: float) -> Record | None:
        """The backfill's record; None when unknown or expired."""
        if not is_queue_id(backfill_id):
            return None
        text = await self.redis.hget(self.keys.backfills, backfill_id)
        if text is None:
            return None
        found = Record.of(text)
        return found if found.expires_at > now else None

    async def everything(self) -> list[Record]:
        """Every backfill's record, expired ones too (one HGETALL)."""
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.backfills)  # type: ignore[assignment]
        return [Record.of(text) for text in raw.values()]

    async def proposal_states(self, proposal_ids: Sequence[str]) -> dict[str, str]:
        """Each proposal's state (pending, accepted or failed); a proposal the queue forgot
        reads as failed."""
        bodies = await QueueStore(self.redis, self.keys.mode).done_fields(proposal_ids)
        return {
            proposal_id: json.loads(body).get("state", "accepted") if body is not None else "failed"
            for proposal_id, body in zip(proposal_ids, bodies, strict=True)
        }

    async def claim(
        self,
        waiting: Waiting,
        fills: Sequence[tuple[ProposalClaim, Record, Record, str]],
        proposal_ids: Sequence[str],
        now: float,
        ttl: float,
        render: Render,
        deadline: float | None,
    ) -> list[tuple[int, str]]:
        """Claim each fill (its proposal, the record it was chosen from, the record it writes,
        the roster's answers' JSON or "") whose tickets all still wait and whose backfill still
        has the version read: the index and the proposal id of each claimed."""
        queue = QueueStore(self.redis, self.keys.mode)
        claims = [claim for claim, _, _, _ in fills]
        keys, args, tried = queue.claim_arguments(waiting, claims, proposal_ids, now, ttl, render, deadline)
        if not tried:
            return []
        head: list[str | bytes | int] = [*args[:2], len(keys) + 1, repr(now), len(tried)]
        for index, _ in tried:
            _, old, new, answers = fills[index]
            before = set(old.players())
            joining = [name for name in new.players() if name not in before]
            head += [old.backfill_id, old.version, new.to_json(), answers, len(joining), *joining]
        keys += [self.keys.backfills, self.keys.rostered]
        claimed = await run(self.redis, BACKFILL_CLAIM, keys, [*head, *args[2:]])
        return [tried[int(number) - 1] for number in claimed]


def players_of(value: bytes) -> list[str]:
    """A pool value's players (their JSON array holds identifiers: cut, not decoded)."""
    size = int(record.field_of(value, HeaderField.PLAYERS))
    names: list[str] = record.tail(value, size)[2][2:-2].decode().split('","')
    return names


def ratings_of(value: bytes) -> list[list[float]]:
    """A pool value's players' [mu, sigma]."""
    size = int(record.field_of(value, HeaderField.PLAYERS))
    flat = struct.unpack_from(f"<{2 * size}d", value, record.HEADER_BYTES)
    return [[flat[2 * i], flat[2 * i + 1]] for i in range(size)]
