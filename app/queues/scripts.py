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

    async def __call__(self, redis: Redis, keys: Sequence[str], args: Sequence[str | int | bytes]) -> Any:
        try:
            return await redis.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await redis.eval(self.source, len(keys), *keys, *args)


# Redis runs every redis.call() through its command machinery, so the scripts read and write
# many fields per call (HMGET, HSET, HDEL over a batch) rather than one call per ticket;
# _CHUNKED keeps each call's arguments within Lua's stack. Every key a script touches is
# declared in KEYS, as Redis Cluster requires.
_CHUNKED = """
local function chunked(command, key, items)
  local out, n = {}, #items
  for first = 1, n, 1000 do
    local last = math.min(first + 999, n)
    local reply = redis.call(command, key, unpack(items, first, last))
    if type(reply) == 'table' then
      for i = 1, #reply do out[#out + 1] = reply[i] end
    end
  end
  return out
end
"""

# A waiting ticket is one field of the pool hash; its value (store.py builds it) is a header
# of six little-endian doubles (enqueued_at, attribute group, players, Σ mu, Σ sigma²,
# expires_at), then mu and sigma of each player (two doubles each), the canonical attributes,
# a newline and the players' JSON array.
_PARSE = """
local function parse(value)
  local players = struct.unpack('<d', value, 17)
  local expires = struct.unpack('<d', value, 41)
  local tail = string.sub(value, 49 + 16 * players)
  local cut = string.find(tail, '\\n', 1, true)
  return expires, string.sub(tail, 1, cut - 1), string.sub(tail, cut + 1)
end
"""

# Releases the holds still held by the given tickets: after a ticket expired, its player may
# already hold a newer one. `owners` maps each player to the ticket whose hold may go.
_RELEASE = """
local function release(holders, owners)
  local names = {}
  for name in pairs(owners) do names[#names + 1] = name end
  if #names == 0 then return end
  local held = chunked('HMGET', holders, names)
  local gone = {}
  for i = 1, #names do
    local id = owners[names[i]]
    if held[i] and string.sub(held[i], -#id - 1) == ' ' .. id then gone[#gone + 1] = names[i] end
  end
  if #gone > 0 then chunked('HDEL', holders, gone) end
end
"""

# KEYS: pool, holders.
# ARGV: now, expires_at, JSON [[id, [players], value length], …], the values end to end.
# Returns per ticket 0 (queued) or the 1-based position of a player already holding a ticket
# (an earlier ticket of the batch counts).
ENQUEUE = Script(
    _CHUNKED
    + """
local pool, holders = KEYS[1], KEYS[2]
local now, expires = tonumber(ARGV[1]), ARGV[2]
local tickets, values = cjson.decode(ARGV[3]), ARGV[4]
local names = {}
for t = 1, #tickets do
  local players = tickets[t][2]
  for i = 1, #players do names[#names + 1] = players[i] end
end
local held = chunked('HMGET', holders, names)
local out, fields, holds, taken, k, at = {}, {}, {}, {}, 0, 1
for t = 1, #tickets do
  local id, players, length = tickets[t][1], tickets[t][2], tickets[t][3]
  local clash = 0
  for i = 1, #players do
    local hold = held[k + i]
    if taken[players[i]] or (hold and tonumber(string.match(hold, '^%S+')) > now) then
      clash = i
      break
    end
  end
  if clash == 0 then
    fields[#fields + 1] = id
    fields[#fields + 1] = string.sub(values, at, at + length - 1)
    local hold = expires .. ' ' .. id
    for i = 1, #players do
      taken[players[i]] = true
      holds[#holds + 1] = players[i]
      holds[#holds + 1] = hold
    end
  end
  out[t] = clash
  k = k + #players
  at = at + length
end
if #fields > 0 then
  chunked('HSET', pool, fields)
  chunked('HSET', holders, holds)
end
return out
"""
)

# KEYS: pool, holders, then per proposal its key and its tickets' status keys, team by team.
# ARGV: now, seconds to keep a proposal and its tickets' status, then JSON
#       [[proposal id, quality, longest wait, [[team's ticket ids], …]], …] with the two
#       numbers as their shortest decimal strings (written into the JSON as they are).
# Returns {the 1-based numbers of the proposals claimed, their JSON joined by commas}.
CLAIM = Script(
    _CHUNKED
    + _PARSE
    + """
local pool, holders = KEYS[1], KEYS[2]
local now, keep = tonumber(ARGV[1]), ARGV[2]
local proposals = cjson.decode(ARGV[3])
local wanted = {}
for p = 1, #proposals do
  local teams = proposals[p][4]
  for t = 1, #teams do
    for i = 1, #teams[t] do wanted[#wanted + 1] = teams[t][i] end
  end
end
local values = chunked('HMGET', pool, wanted)
local k, row, taken, claimed, bodies, gone, released = 3, 0, {}, {}, {}, {}, {}
for p = 1, #proposals do
  local proposal = proposals[p]
  local teams = proposal[4]
  local first, count, free, attributes, players = row, 0, true, nil, {}
  for t = 1, #teams do
    for i = 1, #teams[t] do
      count = count + 1
      local id, value = teams[t][i], values[row + count]
      if not value or taken[id] then
        free = false
      else
        local expires, attrs, names = parse(value)
        attributes = attributes or attrs
        if expires <= now or attrs ~= attributes then free = false end
        players[count] = names
      end
    end
  end
  if free then
    -- Players are identifiers (no escapes needed): a team is its tickets' arrays spliced.
    local team_json, ids, r = {}, {}, 0
    for t = 1, #teams do
      local parts = {}
      for i = 1, #teams[t] do
        r = r + 1
        ids[r] = teams[t][i]
        parts[i] = string.sub(players[r], 2, -2)
      end
      team_json[t] = '[' .. table.concat(parts, ',') .. ']'
    end
    local body = '{"proposal_id":"' .. proposal[1] .. '","teams":[' .. table.concat(team_json, ',')
      .. '],"ticket_ids":["' .. table.concat(ids, '","') .. '"],"quality":' .. proposal[2]
      .. ',"longest_wait_s":' .. proposal[3] .. '}'
    redis.call('SET', KEYS[k], body, 'EX', keep)
    local status = 'matched ' .. proposal[1]
    for r = 1, count do
      redis.call('SET', KEYS[k + r], status, 'EX', keep)
      taken[ids[r]] = true
      gone[#gone + 1] = ids[r]
      local names = cjson.decode(players[r])
      for i = 1, #names do released[#released + 1] = names[i] end
    end
    claimed[#claimed + 1] = p
    bodies[#bodies + 1] = body
  end
  row = row + count
  k = k + 1 + count
end
if #gone > 0 then
  chunked('HDEL', pool, gone)
  chunked('HDEL', holders, released)
end
return {claimed, table.concat(bodies, ',')}
"""
)

# KEYS: pool, holders, the ticket's status key. ARGV: the ticket's id, seconds to keep its status.
# Returns -1 unknown, 1 cancelled (or already finished), 2 already matched.
CANCEL = Script(
    _CHUNKED
    + _PARSE
    + _RELEASE
    + """
local pool, holders, id = KEYS[1], KEYS[2], ARGV[1]
local value = redis.call('HGET', pool, id)
if value then
  local _, _, players = parse(value)
  redis.call('HDEL', pool, id)
  redis.call('SET', KEYS[3], 'cancelled', 'EX', ARGV[2])
  local owners = {}
  for _, name in ipairs(cjson.decode(players)) do owners[name] = id end
  release(holders, owners)
  return 1
end
local status = redis.call('GET', KEYS[3])
if not status then return -1 end
if string.sub(status, 1, 8) == 'matched ' then return 2 end
return 1
"""
)

# KEYS: pool, holders, then the tickets' status keys. ARGV: now, seconds to keep a status,
# then the tickets' ids. Each ticket still waiting past its own expiry leaves the pool and
# reads as expired. Returns how many did.
EXPIRE = Script(
    _CHUNKED
    + _PARSE
    + _RELEASE
    + """
local pool, holders = KEYS[1], KEYS[2]
local now, keep = tonumber(ARGV[1]), ARGV[2]
local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
local values = chunked('HMGET', pool, ids)
local gone, owners = {}, {}
for i = 1, #ids do
  if values[i] then
    local expires, _, players = parse(values[i])
    if expires <= now then
      gone[#gone + 1] = ids[i]
      redis.call('SET', KEYS[2 + i], 'expired', 'EX', keep)
      for _, name in ipairs(cjson.decode(players)) do owners[name] = ids[i] end
    end
  end
end
if #gone > 0 then chunked('HDEL', pool, gone) end
release(holders, owners)
return #gone
"""
)
