"""The matchmaking queue in Redis: tickets, holds and the Lua scripts that change them.

Every key of a mode's queue carries the hash tag {mode}, so each script touches one
Redis Cluster slot, and every key a script touches is declared in its KEYS. "v2" names this
layout: keys of the first one (mm:{mode}:...) are never read, and a Redis that still holds
them can drop them (the ticket hashes among them expire by themselves).

    mm:v2:{mode}:pool         hash: waiting ticket -> its value (below)
    mm:v2:{mode}:holders      hash: player -> "<expires_at> <ticket>", the player's active ticket
    mm:v2:{mode}:t:<ticket>   string: a finished ticket's status: "matched <proposal>",
                              "cancelled" or "expired" (kept for the TTL plus a day)
    mm:v2:{mode}:m:<proposal> string: a claimed proposal's JSON (kept as long)

A waiting ticket is one field of the pool: its value starts with six little-endian doubles
(enqueued_at, attribute group (pool.attribute_group), players, Σ mu, Σ sigma², expires_at),
then each player's mu and sigma as doubles, the canonical attributes, a newline and the
players' JSON array. Matchmaking reads every waiting ticket with one HGETALL and turns the
headers into columns with one np.frombuffer: no JSON and no object per ticket. There is no
index by skill and none by age: the pool is read whole, sorted by skill in NumPy, and its
enqueue times say which tickets are past the TTL (those are swept out as the pool is read).

Queueing a ticket writes two hash fields and nothing else: the pool value and its players'
holds. A hold is a field of one hash rather than a key per player, so scripts can release
the holds of players they read from the pool without naming every player in KEYS first. A
field cannot expire by itself, so a hold carries its ticket's expiry and counts only until
then; matched and cancelled tickets release their holds at once, expired ones when the sweep
reaches them (and only if the hold is still theirs).

Enqueueing is one script for a whole batch. Claiming is one script for all the proposals of
a matchmaking call: each proposal's tickets are checked to be still waiting, unexpired and
of equal attributes, and then taken together, or none of them is: two callers can never get
the same ticket. The script also writes each proposal's JSON from its tickets' players, so a
matchmaking call is two round trips (pool, claim) whatever its size, plus one when some
tickets have expired. The scripts read and write whole batches per Redis command: a Lua
redis.call() costs more than the field it touches.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from redis.asyncio import Redis

from app.matchmaking.pool import Pool, attribute_group
from app.queues.scripts import CANCEL, CLAIM, ENQUEUE, EXPIRE

# Expired tickets swept per read of the pool; any more wait for the next read.
SWEEP_BATCH = 1000

# A pool value's header: enqueued_at, group, players, Σ mu, Σ sigma², expires_at.
HEADER_DOUBLES = 6
HEADER_BYTES = 8 * HEADER_DOUBLES

# A finished ticket's status stays readable this long.
RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True, slots=True)
class Keys:
    mode: str

    @property
    def prefix(self) -> str:
        return f"mm:v2:{{{self.mode}}}:"

    def ticket(self, ticket_id: str) -> str:
        """A finished ticket's status."""
        return f"{self.prefix}t:{ticket_id}"

    @property
    def pool(self) -> str:
        return f"{self.prefix}pool"

    def proposal(self, proposal_id: str) -> str:
        return f"{self.prefix}m:{proposal_id}"

    @property
    def holders(self) -> str:
        return f"{self.prefix}holders"


# Named tuples rather than frozen dataclasses: a call builds a thousand of them, and a frozen
# dataclass sets each field through object.__setattr__.
class NewTicket(NamedTuple):
    ticket_id: str
    players: list[str]
    ratings: list[tuple[float, float]]
    attributes: str  # canonical JSON


@dataclass(frozen=True, slots=True)
class TicketState:
    status: str  # queued, matched, cancelled or expired
    match: str | None  # the proposal's JSON, once matched


class Claim(NamedTuple):
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
        group_of: dict[str, int] = {}
        for ticket in tickets:
            if ticket.attributes not in group_of:
                group_of[ticket.attributes] = attribute_group(ticket.attributes)
        sizes = [len(ticket.players) for ticket in tickets]
        # The numbers travel as doubles, packed here: exact, and no decimal text to write or parse.
        ratings = np.array([r for ticket in tickets for r in ticket.ratings], dtype="<f8").reshape(-1, 2)
        starts = np.cumsum([0, *sizes[:-1]])
        headers = np.empty((len(tickets), HEADER_DOUBLES), dtype="<f8")
        headers[:, 0] = now
        headers[:, 1] = [group_of[ticket.attributes] for ticket in tickets]
        headers[:, 2] = sizes
        headers[:, 3] = _party_sums(ratings[:, 0], starts, sizes)
        headers[:, 4] = _party_sums(ratings[:, 1] * ratings[:, 1], starts, sizes)
        headers[:, 5] = now + ttl
        header_bytes, rating_bytes = headers.tobytes(), ratings.tobytes()
        values = []
        for number, (ticket, start) in enumerate(zip(tickets, starts.tolist(), strict=True)):
            # Identifiers need no escaping in JSON; canonical attributes hold no raw newline.
            values.append(
                header_bytes[HEADER_BYTES * number : HEADER_BYTES * (number + 1)]
                + rating_bytes[16 * start : 16 * (start + len(ticket.players))]
                + (ticket.attributes + '\n["' + '","'.join(ticket.players) + '"]').encode()
            )
        index = json.dumps([[t.ticket_id, t.players, len(v)] for t, v in zip(tickets, values, strict=True)])
        result = await ENQUEUE(
            self.redis,
            [self.keys.pool, self.keys.holders],
            [repr(now), repr(now + ttl), index, b"".join(values)],
        )
        return [int(r) for r in result]

    async def ticket(self, ticket_id: str, now: float) -> TicketState | None:
        """The ticket's status (queued, matched, cancelled or expired) and, once matched, its
        proposal's JSON; None if the queue never had it (or forgot it after the retention)."""
        value: Any = await self.redis.hget(self.keys.pool, ticket_id)
        if value is not None:
            expires_at = float(np.frombuffer(value[:HEADER_BYTES], dtype="<f8")[5])
            return TicketState("queued" if expires_at > now else "expired", None)
        status = await self.redis.get(self.keys.ticket(ticket_id))
        if status is None:
            return None
        state, _, proposal = _text(status).partition(" ")
        body = await self.redis.get(self.keys.proposal(proposal)) if proposal else None
        return TicketState(state, _text(body) if body is not None else None)

    async def pool(self, now: float, ttl: float) -> Pool:
        """Every waiting, unexpired ticket as columns, in one round trip; tickets past the
        TTL are swept out on the way (one more round trip, only when there are some)."""
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.pool)  # type: ignore[assignment]
        headers = np.frombuffer(b"".join(value[:HEADER_BYTES] for value in raw.values()), dtype="<f8")
        headers = headers.reshape(-1, HEADER_DOUBLES)
        waited = now - headers[:, 0]
        ids = [key.decode() for key in raw]
        lapsed = np.nonzero((waited >= ttl) | (headers[:, 5] <= now))[0]
        if len(lapsed):
            await self._sweep([ids[i] for i in lapsed[:SWEEP_BATCH].tolist()], now, ttl)
        live = np.nonzero((waited < ttl) & (headers[:, 5] > now))[0]
        headers = headers[live]
        return Pool(
            [ids[i] for i in live.tolist()],
            headers[:, 2].astype(np.int64),
            headers[:, 3].copy(),
            headers[:, 4].copy(),
            waited[live],
            headers[:, 1].astype(np.int64),
        )

    async def claim(self, claims: Sequence[Claim], now: float, ttl: float) -> tuple[list[int], bytes]:
        """Claim each proposal whose tickets are all still waiting, unexpired and of equal
        attributes: the indexes of those claimed, and their JSON joined by commas."""
        if not claims:
            return [], b""
        keys = [self.keys.pool, self.keys.holders]
        proposal, ticket = self.keys.proposal(""), self.keys.ticket("")  # the key prefixes
        for claim in claims:
            keys.append(proposal + claim.proposal_id)
            keys += [ticket + t for team in claim.teams for t in team]
        payload = json.dumps(
            [
                [claim.proposal_id, repr(float(claim.quality)), repr(float(claim.longest_wait)), claim.teams]
                for claim in claims
            ]
        )
        claimed, bodies = await CLAIM(self.redis, keys, [repr(now), _kept(ttl), payload])
        return [int(number) - 1 for number in claimed], bodies

    async def cancel(self, ticket_id: str, ttl: float) -> int:
        """-1 unknown, 1 cancelled (or already finished), 2 already matched."""
        keys = [self.keys.pool, self.keys.holders, self.keys.ticket(ticket_id)]
        return int(await CANCEL(self.redis, keys, [ticket_id, _kept(ttl)]))

    async def _sweep(self, ids: list[str], now: float, ttl: float) -> int:
        """Take the tickets still waiting past their expiry out of the pool (they then read as
        expired); how many there were."""
        keys = [self.keys.pool, self.keys.holders, *[self.keys.ticket(t) for t in ids]]
        return int(await EXPIRE(self.redis, keys, [repr(now), _kept(ttl), *ids]))

    async def stats(self, now: float, ttl: float) -> tuple[int, int, float]:
        """(tickets, players, oldest wait in seconds) of the waiting tickets."""
        pool = await self.pool(now, ttl)
        oldest = float(pool.waited.max()) if len(pool) else 0.0
        return len(pool), int(pool.size.sum()), oldest


def _party_sums(values: npt.NDArray[np.float64], starts: npt.NDArray[np.int64], sizes: list[int]) -> Any:
    """Each ticket's sum of its players' values, added left to right as Python's sum() does
    (np.add.reduceat may pair them differently and round differently in the last bit)."""
    counts = np.array(sizes)
    total = values[starts].copy()
    for offset in range(1, max(sizes)):
        more = counts > offset
        total[more] += values[starts[more] + offset]
    return total


def _kept(ttl: float) -> int:
    """Seconds a ticket or proposal stays readable: its TTL, then the retention."""
    return int(ttl + RETENTION_SECONDS)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
