"""The matchmaking queue in Redis: tickets, indexes and the Lua scripts that change them.

Every key of a mode's queue carries the hash tag {mode}, so each script touches one
Redis Cluster slot:

    mm:{mode}:t:<ticket>   hash: players, ratings, attributes, enqueued_at, expires_at, status, match
    mm:{mode}:data         hash: ticket -> compact JSON of what matchmaking reads (one HGETALL)
    mm:{mode}:skill        sorted set: waiting tickets by mean mu
    mm:{mode}:age          sorted set: waiting tickets by enqueue time
    mm:{mode}:p:<player>   string: the player's active ticket (expires with it)

Claiming a proposal is one script that checks every ticket is still waiting and unexpired
and then takes them all, or takes nothing: two callers can never get the same ticket.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

# A finished ticket's status stays readable this long.
RETENTION_SECONDS = 24 * 3600

_ENQUEUE = """
for i = 3, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return i - 2 end
end
local ticket, data, skill, age = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
redis.call('HSET', ticket, 'players', ARGV[4], 'ratings', ARGV[5], 'attributes', ARGV[6],
           'enqueued_at', ARGV[7], 'expires_at', ARGV[8], 'status', 'queued', 'match', '')
redis.call('EXPIRE', ticket, ARGV[9])
redis.call('HSET', data, ARGV[3], ARGV[10])
redis.call('ZADD', skill, ARGV[11], ARGV[3])
redis.call('ZADD', age, ARGV[7], ARGV[3])
for i = 3, #KEYS do redis.call('SET', KEYS[i], ARGV[3], 'PX', ARGV[12]) end
return 0
"""

_CLAIM = """
local n, now = tonumber(ARGV[1]), tonumber(ARGV[2])
for i = 1, n do
  local t = KEYS[3 + i]
  if redis.call('HGET', t, 'status') ~= 'queued' then return 0 end
  if tonumber(redis.call('HGET', t, 'expires_at')) <= now then return 0 end
end
for i = 1, n do
  local id = ARGV[3 + i]
  redis.call('HSET', KEYS[3 + i], 'status', 'matched', 'match', ARGV[3])
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
end
for i = 4 + n, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""

_CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return -1 end
if status == 'matched' then return 2 end
if status ~= 'queued' then return 1 end
redis.call('HSET', KEYS[1], 'status', 'cancelled')
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""

_EXPIRE = """
local now, expired = tonumber(ARGV[1]), 0
for i = 4, #KEYS do
  local id = ARGV[i - 2]
  if redis.call('HGET', KEYS[i], 'status') == 'queued'
     and tonumber(redis.call('HGET', KEYS[i], 'expires_at')) <= now then
    redis.call('HSET', KEYS[i], 'status', 'expired')
    expired = expired + 1
  end
  if redis.call('HGET', KEYS[i], 'status') ~= 'queued' then
    redis.call('ZREM', KEYS[1], id)
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
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
    def data(self) -> str:
        return f"{self.prefix}data"

    @property
    def skill(self) -> str:
        return f"{self.prefix}skill"

    @property
    def age(self) -> str:
        return f"{self.prefix}age"


class QueueStore:
    """Redis commands and scripts for one mode's queue."""

    def __init__(self, redis: Redis, mode: str) -> None:
        self.redis = redis
        self.keys = Keys(mode)

    async def enqueue(
        self,
        ticket_id: str,
        players: list[str],
        ratings: list[tuple[float, float]],
        attributes: str,
        now: float,
        ttl: float,
    ) -> int:
        """0 when queued, else the 1-based position of a player who already holds a ticket."""
        skill = sum(mu for mu, _ in ratings) / len(ratings)
        compact = json.dumps([players, ratings, attributes, now])
        result = await self.redis.eval(
            _ENQUEUE,
            2 + len(players),
            self.keys.ticket(ticket_id),
            self.keys.data,
            *[self.keys.player(p) for p in players],
            self.keys.skill,
            self.keys.age,
            ticket_id,
            json.dumps(players),
            json.dumps(ratings),
            attributes,
            repr(now),
            repr(now + ttl),
            int(ttl + RETENTION_SECONDS),
            compact,
            repr(skill),
            int(ttl * 1000),
        )
        return int(result)

    async def ticket(self, ticket_id: str) -> dict[str, str] | None:
        raw = await self.redis.hgetall(self.keys.ticket(ticket_id))
        return {_text(k): _text(v) for k, v in raw.items()} if raw else None

    async def waiting(self) -> dict[str, Any]:
        """ticket -> [players, ratings, attributes, enqueued_at], in one round trip."""
        raw = await self.redis.hgetall(self.keys.data)
        return {_text(k): json.loads(v) for k, v in raw.items()}

    async def claim(self, ticket_ids: list[str], players: list[str], proposal: str, now: float) -> bool:
        keys = [
            self.keys.skill,
            self.keys.age,
            self.keys.data,
            *[self.keys.ticket(t) for t in ticket_ids],
            *[self.keys.player(p) for p in players],
        ]
        result = await self.redis.eval(
            _CLAIM,
            len(keys),
            *keys,
            len(ticket_ids),
            repr(now),
            proposal,
            *ticket_ids,
        )
        return int(result) == 1

    async def cancel(self, ticket_id: str, players: list[str]) -> int:
        """-1 unknown, 1 cancelled (or already finished), 2 already matched."""
        keys = [
            self.keys.ticket(ticket_id),
            self.keys.skill,
            self.keys.age,
            self.keys.data,
            *[self.keys.player(p) for p in players],
        ]
        return int(await self.redis.eval(_CANCEL, len(keys), *keys, ticket_id))

    async def expire(self, now: float, ttl: float) -> int:
        """Mark tickets past their TTL expired and drop them from the indexes."""
        found: Any = await self.redis.zrangebyscore(self.keys.age, "-inf", repr(now - ttl), 0, 1000)
        ids = [_text(i) for i in found]
        if not ids:
            return 0
        keys = [self.keys.skill, self.keys.age, self.keys.data, *[self.keys.ticket(t) for t in ids]]
        return int(await self.redis.eval(_EXPIRE, len(keys), *keys, repr(now), *ids))

    async def depth(self, now: float, ttl: float) -> tuple[int, float]:
        """(unexpired waiting tickets, oldest wait in seconds) in two cheap reads."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zcount(self.keys.age, repr(now - ttl), "+inf")
            pipe.zrangebyscore(self.keys.age, repr(now - ttl), "+inf", 0, 1, withscores=True)
            count, oldest = await pipe.execute()
        return int(count), (now - float(oldest[0][1])) if oldest else 0.0

    async def stats(self, now: float) -> tuple[int, int, float]:
        """(tickets, players, oldest wait in seconds) of the waiting tickets."""
        data = await self.waiting()
        oldest: Any = await self.redis.zrange(self.keys.age, 0, 0, withscores=True)
        players = sum(len(entry[0]) for entry in data.values())
        return len(data), players, (now - float(oldest[0][1])) if oldest else 0.0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
