"""The matchmaking queue in Redis: tickets, indexes and the Lua scripts that change them.

Every key of a mode's queue carries the hash tag {mode}, so each script touches one
Redis Cluster slot, and every key a script touches is declared in its KEYS:

    mm:{mode}:t:<ticket>   hash: players, ratings, attributes, enqueued_at, expires_at, status,
                           and match (the proposal's id) once matched
    mm:{mode}:pool         hash: ticket -> the 40-byte record matchmaking reads (below)
    mm:{mode}:holders      hash: player -> "<expires_at> <ticket>", the player's active ticket
    mm:{mode}:m:<proposal> string: a claimed proposal's JSON

A pool record is five little-endian doubles: enqueued_at, attribute group
(pool.attribute_group), players, Σ mu, Σ sigma². Matchmaking reads every waiting ticket
with one HGETALL and turns the records into columns with one np.frombuffer: no JSON and no
object per ticket. There is no index by skill and none by age: the pool is read whole, sorted
by skill in NumPy, and its records' enqueue times say which tickets are past the TTL (those
are swept out as the pool is read). Each index would cost two Redis commands per ticket.

A player's hold is a field of one hash rather than a key of its own, so the claim script can
release the holds of the players it reads from the tickets (a key per player would have to
be named in KEYS, which means reading every ticket's players before claiming). A field
cannot expire by itself, so a hold carries its ticket's expiry and counts only until then;
matched and cancelled tickets release their holds at once, expired ones when the expiry
sweep reaches them (and only if the hold is still theirs).

Enqueueing is one script for a whole batch of tickets (Lua builds the record). Claiming is
one script for all the proposals of a matchmaking call: each proposal's tickets are checked
to be still waiting, unexpired and of equal attributes, and then taken together, or none of
them is: two callers can never get the same ticket. The script also writes each proposal's
JSON from its tickets' players, so a matchmaking call is two round trips (pool, claim)
whatever its size, plus one when some tickets have expired.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from redis.asyncio import Redis

from app.matchmaking.pool import Pool, attribute_group
from app.queues.scripts import CANCEL, CLAIM, ENQUEUE, EXPIRE

# Expired tickets swept per read of the pool; any more wait for the next read.
SWEEP_BATCH = 1000

# A finished ticket's status stays readable this long.
RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True, slots=True)
class Keys:
    mode: str

    @property
    def prefix(self) -> str:
        return f"mm:{{{self.mode}}}:"

    def ticket(self, ticket_id: str) -> str:
        return f"{self.prefix}t:{ticket_id}"

    @property
    def pool(self) -> str:
        return f"{self.prefix}pool"

    def proposal(self, proposal_id: str) -> str:
        return f"{self.prefix}m:{proposal_id}"

    @property
    def holders(self) -> str:
        return f"{self.prefix}holders"


@dataclass(frozen=True, slots=True)
class NewTicket:
    ticket_id: str
    players: list[str]
    ratings: list[tuple[float, float]]
    attributes: str  # canonical JSON


@dataclass(frozen=True, slots=True)
class Claim:
    """A proposal to claim: its tickets team by team (the script fills in their players)."""

    proposal_id: str
    teams: list[list[str]]
    quality: float
    longest_wait: float


class QueueStore:
    """Redis commands and scripts for one mode's queue."""

    def __init__(self, redis: Redis, mode: str) -> None:
        self.redis = redis
        self.keys = Keys(mode)

    async def enqueue(self, tickets: Sequence[NewTicket], now: float, ttl: float) -> list[int]:
        """Per ticket: 0 when queued, else the 1-based position of a player who already holds
        an active ticket (an earlier ticket of the same batch counts)."""
        keys = [self.keys.pool, self.keys.holders]
        payload = []
        group_of: dict[str, int] = {}
        for ticket in tickets:
            keys.append(self.keys.ticket(ticket.ticket_id))
            group = group_of.get(ticket.attributes)
            if group is None:
                group = group_of[ticket.attributes] = attribute_group(ticket.attributes)
            payload.append(
                [
                    ticket.ticket_id,
                    ticket.players,
                    json.dumps(ticket.ratings),
                    ticket.attributes,
                    group,
                    sum(m for m, _ in ticket.ratings),
                    sum(s * s for _, s in ticket.ratings),
                ]
            )
        args: list[str | int] = [repr(now), repr(now + ttl), _kept(ttl), json.dumps(payload)]
        result = await ENQUEUE(self.redis, keys, args)
        return [int(r) for r in result]

    async def ticket(self, ticket_id: str) -> dict[str, str] | None:
        """The ticket's fields, with `match` the proposal's JSON once it is matched."""
        raw = await self.redis.hgetall(self.keys.ticket(ticket_id))
        if not raw:
            return None
        fields = {_text(k): _text(v) for k, v in raw.items()}
        if fields.get("match"):
            body = await self.redis.get(self.keys.proposal(fields["match"]))
            fields["match"] = _text(body) if body is not None else ""
        return fields

    async def pool(self, now: float, ttl: float) -> Pool:
        """Every waiting, unexpired ticket as columns, in one round trip; tickets past the
        TTL are swept out on the way (one more round trip, only when there are some)."""
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.pool)  # type: ignore[assignment]
        records = np.frombuffer(b"".join(raw.values()), dtype="<f8").reshape(-1, 5)
        waited = now - records[:, 0]
        ids = [key.decode() for key in raw]
        lapsed = np.nonzero(waited >= ttl)[0]
        if len(lapsed):
            await self._sweep([ids[i] for i in lapsed[:SWEEP_BATCH].tolist()], now)
        live = np.nonzero(waited < ttl)[0]
        records = records[live]
        return Pool(
            [ids[i] for i in live.tolist()],
            records[:, 2].astype(np.int64),
            records[:, 3].copy(),
            records[:, 4].copy(),
            waited[live],
            records[:, 1].astype(np.int64),
        )

    async def claim(self, claims: Sequence[Claim], now: float, ttl: float) -> tuple[list[int], bytes]:
        """Claim each proposal whose tickets are all still waiting, unexpired and of equal
        attributes: the indexes of those claimed, and their JSON joined by commas."""
        if not claims:
            return [], b""
        keys = [self.keys.pool, self.keys.holders]
        for claim in claims:
            keys.append(self.keys.proposal(claim.proposal_id))
            keys += [self.keys.ticket(t) for team in claim.teams for t in team]
        payload = json.dumps(
            [
                [claim.proposal_id, repr(float(claim.quality)), repr(float(claim.longest_wait)), claim.teams]
                for claim in claims
            ]
        )
        claimed, bodies = await CLAIM(self.redis, keys, [repr(now), _kept(ttl), payload])
        return [int(number) - 1 for number in claimed], bodies

    async def cancel(self, ticket_id: str) -> int:
        """-1 unknown, 1 cancelled (or already finished), 2 already matched."""
        keys = [self.keys.ticket(ticket_id), self.keys.pool, self.keys.holders]
        return int(await CANCEL(self.redis, keys, [ticket_id]))

    async def _sweep(self, ids: list[str], now: float) -> int:
        """Mark these tickets expired if they still wait past their expiry, and drop every one
        no longer waiting from the pool; how many were marked."""
        keys = [self.keys.pool, self.keys.holders, *[self.keys.ticket(t) for t in ids]]
        return int(await EXPIRE(self.redis, keys, [repr(now), *ids]))

    async def stats(self, now: float, ttl: float) -> tuple[int, int, float]:
        """(tickets, players, oldest wait in seconds) of the waiting tickets."""
        pool = await self.pool(now, ttl)
        oldest = float(pool.waited.max()) if len(pool) else 0.0
        return len(pool), int(pool.size.sum()), oldest


def _kept(ttl: float) -> int:
    """Seconds a ticket or proposal stays readable: its TTL, then the retention."""
    return int(ttl + RETENTION_SECONDS)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
