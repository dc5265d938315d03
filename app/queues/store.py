"""The matchmaking queue in Redis: tickets, indexes and the Lua scripts that change them.

Every key of a mode's queue carries the hash tag {mode}, so each script touches one
Redis Cluster slot:

    mm:{mode}:t:<ticket>   hash: players, ratings, attributes, enqueued_at, expires_at, status, match
    mm:{mode}:pool         hash: ticket -> the 40-byte record matchmaking reads (below)
    mm:{mode}:age          sorted set: waiting tickets by enqueue time (for expiry and depth)
    mm:{mode}:p:<player>   string: the player's active ticket (expires with it)

A pool record is five little-endian doubles: enqueued_at, attribute group
(pool.attribute_group), players, Σ mu, Σ sigma². Matchmaking reads every waiting ticket
with one HGETALL and turns the records into columns with one np.frombuffer: no JSON and no
object per ticket. There is no separate index by skill: the pool is read whole and sorted by
skill in NumPy, and an index nobody reads would cost two Redis commands per ticket.

Enqueueing is one script for a whole batch of tickets (Lua builds the record). Claiming is
one script for all the proposals of a matchmaking call: each proposal's tickets are checked
to be still waiting and unexpired and then taken together, or none of them is: two callers
can never get the same ticket.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from redis.asyncio import Redis

from app.matchmaking.pool import Pool, attribute_group

# A finished ticket's status stays readable this long.
RETENTION_SECONDS = 24 * 3600

# Each script takes its per-ticket data as one JSON argument (decoded by the cjson Redis
# ships with) rather than as thousands of separate arguments: packing those cost more than
# the rest of a request. Every key is still declared in KEYS, as Redis Cluster requires.

# KEYS: pool, age, then per ticket its key and its players' keys.
# ARGV: now, expires_at, seconds to keep a ticket, ms to hold its players, then JSON
#       [[id, [players], ratings JSON, attributes, group, Σ mu, Σ sigma²], …] with the
#       numbers as their shortest decimal strings, so nothing is rounded on the way.
# Returns per ticket 0 (queued) or the 1-based position of a player already holding a ticket.
_ENQUEUE = """
local pool, age = KEYS[1], KEYS[2]
local now, expires, keep, hold = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local tickets = cjson.decode(ARGV[5])
local k, out = 3, {}
for t = 1, #tickets do
  local ticket = tickets[t]
  local id, players = ticket[1], ticket[2]
  local n = #players
  local clash = 0
  for i = 1, n do
    if redis.call('EXISTS', KEYS[k + i]) == 1 then clash = i break end
  end
  if clash == 0 then
    redis.call('HSET', KEYS[k], 'players', cjson.encode(players), 'ratings', ticket[3],
               'attributes', ticket[4], 'enqueued_at', now, 'expires_at', expires,
               'status', 'queued', 'match', '')
    redis.call('EXPIRE', KEYS[k], keep)
    redis.call('HSET', pool, id, struct.pack('<ddddd', tonumber(now), tonumber(ticket[5]), n,
                                             tonumber(ticket[6]), tonumber(ticket[7])))
    redis.call('ZADD', age, now, id)
    for i = 1, n do redis.call('SET', KEYS[k + i], id, 'PX', hold) end
  end
  out[t] = clash
  k = k + 1 + n
end
return out
"""

# KEYS: pool, age, then per proposal its tickets' keys and its players' keys.
# ARGV: now, then JSON [[[ticket ids], players count, match JSON], …].
# Returns the 1-based numbers of the proposals claimed.
_CLAIM = """
local pool, age = KEYS[1], KEYS[2]
local now = tonumber(ARGV[1])
local proposals = cjson.decode(ARGV[2])
local k, claimed = 3, {}
for p = 1, #proposals do
  local ids, m, match = proposals[p][1], proposals[p][2], proposals[p][3]
  local n = #ids
  local free = true
  for i = 0, n - 1 do
    local state = redis.call('HMGET', KEYS[k + i], 'status', 'expires_at')
    if state[1] ~= 'queued' or tonumber(state[2]) <= now then free = false break end
  end
  if free then
    for i = 0, n - 1 do
      redis.call('HSET', KEYS[k + i], 'status', 'matched', 'match', match)
      redis.call('HDEL', pool, ids[i + 1])
      redis.call('ZREM', age, ids[i + 1])
    end
    for i = 0, m - 1 do redis.call('DEL', KEYS[k + n + i]) end
    claimed[#claimed + 1] = p
  end
  k = k + n + m
end
return claimed
"""

# KEYS: tickets. Returns JSON: per ticket [[players], attributes], or false if it is gone.
_MEMBERS = """
local out = {}
for i = 1, #KEYS do
  local fields = redis.call('HMGET', KEYS[i], 'players', 'attributes')
  if fields[1] then out[i] = {cjson.decode(fields[1]), fields[2]} else out[i] = false end
end
return cjson.encode(out)
"""

# KEYS: the ticket, age, pool, then its players' keys. ARGV: the ticket's id.
_CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'matched' then return 2 end
if status ~= 'queued' then return 1 end
redis.call('HSET', KEYS[1], 'status', 'cancelled')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""

# KEYS: age, pool, then the tickets. ARGV: now, then the tickets' ids.
_EXPIRE = """
local now, expired = tonumber(ARGV[1]), 0
for i = 3, #KEYS do
  local id = ARGV[i - 1]
  if redis.call('HGET', KEYS[i], 'status') == 'queued'
     and tonumber(redis.call('HGET', KEYS[i], 'expires_at')) <= now then
    redis.call('HSET', KEYS[i], 'status', 'expired')
    expired = expired + 1
  end
  if redis.call('HGET', KEYS[i], 'status') ~= 'queued' then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
  end
end
return expired
"""


@dataclass(frozen=True, slots=True)
class Keys:
    mode: str

    @property
    def prefix(self) -> str:
        return f"mm:{{{self.mode}}}:"

    def ticket(self, ticket_id: str) -> str:
        return f"{self.prefix}t:{ticket_id}"

    def player(self, player_id: str) -> str:
        return f"{self.prefix}p:{player_id}"

    @property
    def pool(self) -> str:
        return f"{self.prefix}pool"

    @property
    def age(self) -> str:
        return f"{self.prefix}age"


@dataclass(frozen=True, slots=True)
class NewTicket:
    ticket_id: str
    players: list[str]
    ratings: list[tuple[float, float]]
    attributes: str  # canonical JSON


@dataclass(frozen=True, slots=True)
class Claim:
    ticket_ids: list[str]
    players: list[str]
    match: str  # the proposal's JSON, kept on each of its tickets


class QueueStore:
    """Redis commands and scripts for one mode's queue."""

    def __init__(self, redis: Redis, mode: str) -> None:
        self.redis = redis
        self.keys = Keys(mode)

    async def enqueue(self, tickets: Sequence[NewTicket], now: float, ttl: float) -> list[int]:
        """Per ticket: 0 when queued, else the 1-based position of a player who already holds
        an active ticket (an earlier ticket of the same batch counts)."""
        keys = [self.keys.pool, self.keys.age]
        payload = []
        group_of: dict[str, str] = {}
        for ticket in tickets:
            keys.append(self.keys.ticket(ticket.ticket_id))
            keys += [self.keys.player(p) for p in ticket.players]
            group = group_of.get(ticket.attributes)
            if group is None:
                group = group_of[ticket.attributes] = str(attribute_group(ticket.attributes))
            mu = sum(m for m, _ in ticket.ratings)
            payload.append(
                [
                    ticket.ticket_id,
                    ticket.players,
                    "[" + ",".join(f"[{m!r},{s!r}]" for m, s in ticket.ratings) + "]",
                    ticket.attributes,
                    group,
                    repr(mu),
                    repr(sum(s * s for _, s in ticket.ratings)),
                ]
            )
        args: list[str | int] = [
            repr(now),
            repr(now + ttl),
            int(ttl + RETENTION_SECONDS),
            int(ttl * 1000),
            json.dumps(payload),
        ]
        result = await self.redis.eval(_ENQUEUE, len(keys), *keys, *args)
        return [int(r) for r in result]

    async def ticket(self, ticket_id: str) -> dict[str, str] | None:
        raw = await self.redis.hgetall(self.keys.ticket(ticket_id))
        return {_text(k): _text(v) for k, v in raw.items()} if raw else None

    async def pool(self, now: float, ttl: float) -> Pool:
        """Every waiting, unexpired ticket as columns, in one round trip."""
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.pool)  # type: ignore[assignment]
        records = np.frombuffer(b"".join(raw.values()), dtype="<f8").reshape(-1, 5)
        live = np.nonzero(now - records[:, 0] < ttl)[0]
        ids = [key.decode() for key in raw]
        records = records[live]
        return Pool(
            [ids[i] for i in live.tolist()],
            records[:, 2].astype(np.int64),
            records[:, 3].copy(),
            records[:, 4].copy(),
            now - records[:, 0],
            records[:, 1].astype(np.int64),
        )

    async def members(self, ticket_ids: Sequence[str]) -> list[tuple[list[str], str] | None]:
        """Per ticket: its players and canonical attributes, or None if it is gone."""
        if not ticket_ids:
            return []
        keys = [self.keys.ticket(t) for t in ticket_ids]
        rows = json.loads(await self.redis.eval(_MEMBERS, len(keys), *keys))
        return [(row[0], row[1]) if row else None for row in rows]

    async def claim(self, claims: Sequence[Claim], now: float) -> list[int]:
        """Claim each proposal whose tickets are all still waiting; the indexes of those claimed."""
        if not claims:
            return []
        keys = [self.keys.pool, self.keys.age]
        for claim in claims:
            keys += [self.keys.ticket(t) for t in claim.ticket_ids]
            keys += [self.keys.player(p) for p in claim.players]
        payload = json.dumps([[claim.ticket_ids, len(claim.players), claim.match] for claim in claims])
        claimed = await self.redis.eval(_CLAIM, len(keys), *keys, repr(now), payload)
        return [int(number) - 1 for number in claimed]

    async def cancel(self, ticket_id: str, players: list[str]) -> int:
        """-1 unknown, 1 cancelled (or already finished), 2 already matched."""
        keys = [
            self.keys.ticket(ticket_id),
            self.keys.age,
            self.keys.pool,
            *[self.keys.player(p) for p in players],
        ]
        return int(await self.redis.eval(_CANCEL, len(keys), *keys, ticket_id))

    async def expire(self, now: float, ttl: float) -> int:
        """Mark tickets past their TTL expired and drop them from the indexes."""
        found: Any = await self.redis.zrangebyscore(self.keys.age, "-inf", repr(now - ttl), 0, 1000)
        ids = [_text(i) for i in found]
        if not ids:
            return 0
        keys = [self.keys.age, self.keys.pool, *[self.keys.ticket(t) for t in ids]]
        return int(await self.redis.eval(_EXPIRE, len(keys), *keys, repr(now), *ids))

    async def depth(self, now: float, ttl: float) -> tuple[int, float]:
        """(unexpired waiting tickets, oldest wait in seconds) in two cheap reads."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zcount(self.keys.age, repr(now - ttl), "+inf")
            pipe.zrangebyscore(self.keys.age, repr(now - ttl), "+inf", 0, 1, withscores=True)
            count, oldest = await pipe.execute()
        return int(count), (now - float(oldest[0][1])) if oldest else 0.0

    async def stats(self, now: float, ttl: float) -> tuple[int, int, float]:
        """(tickets, players, oldest wait in seconds) of the waiting tickets."""
        pool = await self.pool(now, ttl)
        oldest = float(pool.waited.max()) if len(pool) else 0.0
        return len(pool), int(pool.size.sum()), oldest


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
