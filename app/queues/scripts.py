"""The Lua scripts of the matchmaking queue (store.py says what the keys hold).

Each runs by its SHA1 (EVALSHA), so a call sends the script's arguments, not its text;
the first call on a server that has not seen it yet sends the text once (EVAL caches it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import NoScriptError


class Script:
    """A Lua script run with EVALSHA, falling back to EVAL when the server lacks it."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    async def __call__(self, redis: Redis, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        try:
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await redis.eval(self.source, len(keys), *keys, *args)


# Each script takes its per-ticket data as one JSON argument (decoded by the cjson Redis
# ships with) rather than as thousands of separate arguments: packing those cost more than
# the rest of a request. Every key is still declared in KEYS, as Redis Cluster requires.

# Releases the holds of a finished ticket's players that are still its own: after it expired,
# a player may already hold a newer ticket. Expects `holders`, `id` and `players` (JSON).
_RELEASE = """
  if players then
    local names = cjson.decode(players)
    for i = 1, #names do
      local held = redis.call('HGET', holders, names[i])
      if held and string.sub(held, -#id - 1) == ' ' .. id then redis.call('HDEL', holders, names[i]) end
    end
  end
"""

# KEYS: pool, holders, then each ticket's key.
# ARGV: now, expires_at, seconds to keep a ticket, then JSON
#       [[id, [players], ratings JSON, attributes, group, Σ mu, Σ sigma²], …]; cjson reads
#       numbers with strtod, so the doubles packed into the record are exactly Python's.
# Returns per ticket 0 (queued) or the 1-based position of a player already holding a ticket.
ENQUEUE = Script(
    """
local pool, holders = KEYS[1], KEYS[2]
local now, expires, keep = ARGV[1], ARGV[2], ARGV[3]
local current = tonumber(now)
local tickets = cjson.decode(ARGV[4])
local out = {}
for t = 1, #tickets do
  local ticket = tickets[t]
  local id, players = ticket[1], ticket[2]
  local n = #players
  local clash = 0
  for i = 1, n do
    local held = redis.call('HGET', holders, players[i])
    if held and tonumber(string.match(held, '^%S+')) > current then clash = i break end
  end
  if clash == 0 then
    local key = KEYS[2 + t]
    redis.call('HSET', key, 'players', cjson.encode(players), 'ratings', ticket[3],
               'attributes', ticket[4], 'enqueued_at', now, 'expires_at', expires,
               'status', 'queued')
    redis.call('EXPIRE', key, keep)
    redis.call('HSET', pool, id, struct.pack('<ddddd', current, ticket[5], n, ticket[6], ticket[7]))
    local hold = expires .. ' ' .. id
    for i = 1, n do redis.call('HSET', holders, players[i], hold) end
  end
  out[t] = clash
end
return out
"""
)

# KEYS: pool, holders, then per proposal its key and its tickets, team by team.
# ARGV: now, seconds to keep a proposal, then JSON
#       [[proposal id, quality, longest wait, [[team's ticket ids], …]], …] with the two
#       numbers as their shortest decimal strings (written into the JSON as they are).
# Returns {the 1-based numbers of the proposals claimed, their JSON joined by commas}.
CLAIM = Script(
    """
local pool, holders = KEYS[1], KEYS[2]
local now, keep = tonumber(ARGV[1]), ARGV[2]
local proposals = cjson.decode(ARGV[3])
local k, claimed, bodies = 3, {}, {}
for p = 1, #proposals do
  local proposal = proposals[p]
  local teams = proposal[4]
  local ids, players = {}, {}
  for t = 1, #teams do
    for i = 1, #teams[t] do ids[#ids + 1] = teams[t][i] end
  end
  local free, attributes = true, nil
  for row = 1, #ids do
    local state = redis.call('HMGET', KEYS[k + row], 'status', 'expires_at', 'players', 'attributes')
    attributes = attributes or state[4]
    if state[1] ~= 'queued' or tonumber(state[2]) <= now or state[4] ~= attributes then
      free = false
      break
    end
    players[row] = state[3]
  end
  if free then
    -- A ticket's players are stored as a JSON array of identifiers (no escapes needed):
    -- a team is its tickets' arrays spliced together.
    local team_json, row = {}, 0
    for t = 1, #teams do
      local parts = {}
      for i = 1, #teams[t] do
        row = row + 1
        parts[i] = string.sub(players[row], 2, -2)
      end
      team_json[t] = '[' .. table.concat(parts, ',') .. ']'
    end
    local body = '{"proposal_id":"' .. proposal[1] .. '","teams":[' .. table.concat(team_json, ',')
      .. '],"ticket_ids":["' .. table.concat(ids, '","') .. '"],"quality":' .. proposal[2]
      .. ',"longest_wait_s":' .. proposal[3] .. '}'
    -- Kept once, under the proposal's key: each ticket names it (a short field keeps the
    -- ticket's hash in Redis's compact encoding).
    redis.call('SET', KEYS[k], body, 'EX', keep)
    for row = 1, #ids do
      redis.call('HSET', KEYS[k + row], 'status', 'matched', 'match', proposal[1])
      redis.call('HDEL', holders, unpack(cjson.decode(players[row])))
    end
    redis.call('HDEL', pool, unpack(ids))
    claimed[#claimed + 1] = p
    bodies[#bodies + 1] = body
  end
  k = k + 1 + #ids
end
return {claimed, table.concat(bodies, ',')}
"""
)

# KEYS: the ticket, pool, holders. ARGV: the ticket's id.
# Returns -1 unknown, 1 cancelled (or already finished), 2 already matched.
CANCEL = Script(
    """
local pool, holders, id = KEYS[2], KEYS[3], ARGV[1]
local state = redis.call('HMGET', KEYS[1], 'status', 'players')
local status, players = state[1], state[2]
if not status then return -1 end
if status == 'matched' then return 2 end
if status ~= 'queued' then return 1 end
redis.call('HSET', KEYS[1], 'status', 'cancelled')
redis.call('HDEL', pool, id)
"""
    + _RELEASE
    + """
return 1
"""
)

# KEYS: pool, holders, then the tickets. ARGV: now, then the tickets' ids.
# Marks each ticket still queued past its own expiry expired, and drops every ticket that is
# no longer queued (or is gone) from the pool. Returns how many it marked.
EXPIRE = Script(
    """
local pool, holders = KEYS[1], KEYS[2]
local now, expired = tonumber(ARGV[1]), 0
for i = 3, #KEYS do
  local id = ARGV[i - 1]
  local state = redis.call('HMGET', KEYS[i], 'status', 'expires_at', 'players')
  local status, players = state[1], state[3]
  if status == 'queued' and tonumber(state[2]) <= now then
    redis.call('HSET', KEYS[i], 'status', 'expired')
    status = 'expired'
    expired = expired + 1
"""
    + _RELEASE
    + """
  end
  if status ~= 'queued' then redis.call('HDEL', pool, id) end
end
return expired
"""
)
