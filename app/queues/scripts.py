"""The Lua scripts of the matchmaking queue (store.py says what the keys hold), and how they run.

redis-py's own Script (register_script) runs each by its SHA1 (EVALSHA), so a call sends the
script's arguments, not its text, and loads the text on a server that lacks it (a replica just
promoted in a cluster has an empty script cache: scripts reach replicas as their effects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError

from app.infra.redis_client import RedisClient, closed_under_command
from app.queues.record import (
    HEADER_BYTES,
    KEPT_ID_BYTES,
    KEPT_LENGTH_BYTES,
    PLAYER_BYTES,
    REGION_BYTES,
    HeaderField,
    lua_position,
)

# On a cluster, how long a script's write waits for a replica's acknowledgement (run()). On a
# healthy shard the ack takes about a round trip; only a master left without a replica (after a
# failover, until an operator adds one back) spends the whole wait on every write.
REPLICA_WAIT_MS = 100


def reply_text(value: Any) -> str:
    """A Redis reply's text: redis-py answers bytes unless the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else str(value)


async def run(
    redis: RedisClient,
    source: str,
    keys: Sequence[str],
    args: Sequence[str | int | bytes],
    writes: bool = True,
) -> Any:
    """Run a queue script. On a cluster, a script that `writes` is acknowledged only once the
    master's replica has its write too, or REPLICA_WAIT_MS passed (a script that only reads
    has nothing to wait for: WAIT would spend the whole wait on a master with no replica).

    Why wait: Redis replicates asynchronously, so a master killed just after answering may take
    writes its replica never saw; the promoted replica would then hand out again tickets a
    matchmaker was already given (double booking), or forget a ticket whose 201 was sent.
    WAIT (which a script may not call) closes that window. It counts the writes of the
    connection it is sent on, so it travels in one pipeline with the script, to the node of the
    script's keys (a cluster pipeline sends one node's commands down one connection, in order).
    It is best effort: past the wait (a master whose replica is gone, after a failover) the
    write stands unconfirmed rather than refused, as refusing would not undo it.
    """
    script = redis.register_script(source)
    if not isinstance(redis, RedisCluster):
        return await script(keys, args)
    node = redis.get_node_from_key(keys[0])
    for _ in range(2):
        async with redis.pipeline(transaction=False) as pipe:
            # (redis-py's cluster pipeline blocks its evalsha() method, not the command)
            pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            if writes:
                pipe.execute_command("WAIT", 1, REPLICA_WAIT_MS, target_nodes=node)
            try:
                result = (await pipe.execute(raise_on_error=False))[0]
            except (AttributeError, RuntimeError) as exc:
                # The cluster client closed this connection under the call (a node it dropped):
                # an outage like any other, answered 503 by the Redis handler.
                if not closed_under_command(exc):
                    raise
                raise RedisConnectionError("the connection was closed under the command") from exc
        if not isinstance(result, NoScriptError):
            break
        # Loaded on the keys' node only (the Script object's reload would send SCRIPT LOAD to
        # every master, and fail while one of them is down, whatever the keys' node).
        await redis.execute_command("SCRIPT", "LOAD", source, target_nodes=node)
    if isinstance(result, Exception):
        raise result
    return result


# Redis runs every redis.call() through its command machinery, so the scripts read and write
# many fields per call (HMGET, HSET, HDEL over a batch) rather than one call per ticket;
# _CHUNKED keeps each call's arguments within Lua's stack. Every key a script touches is
# declared in KEYS, as Redis Cluster requires. Batches arrive as flat ARGV lists (no JSON to
# decode, no string to cut): Lua's string functions cost more per ticket than Redis's commands.
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

# Finished tickets' statuses and claimed proposals live in "done" hashes, one per minute of
# their ids (store.py). A hash lives until `kept` seconds after its latest write: a write only
# ever extends its life (TTL is -1 for a hash without one; EXPIRE's GT option needs Redis 7).
_FINISH = """
local function finish(key, fields, kept)
  chunked('HSET', key, fields)
  if redis.call('TTL', key) < tonumber(kept) then redis.call('EXPIRE', key, kept) end
end
"""

# A waiting ticket is one field of the pool hash; its value is a pool record (record.py).
# Only cancelling, requeueing and the expiry sweep read it here: its expiry and its players.
# The offsets are rendered into the text once, here at import, from record.py's named fields
# rather than sent as ARGV: each script's text (so its SHA1) stays fixed for a given layout,
# no call pays for extra arguments, and the layout is still written in one place.
_PARSE = f"""
local function parse(value)
  local players = struct.unpack('<d', value, {lua_position(HeaderField.PLAYERS)})
  local expires = struct.unpack('<d', value, {lua_position(HeaderField.EXPIRES_AT)})
  local regions = struct.unpack('<d', value, {lua_position(HeaderField.REGIONS)})
  local after = {HEADER_BYTES + 1} + {PLAYER_BYTES} * players + {REGION_BYTES} * regions
  local names = string.find(value, '\\n', after, true)
  local cut = string.find(value, '\\n', names + 1, true)
  return expires, cjson.decode(string.sub(value, cut + 1))
end
"""

# Wakes the long-polls of every process (app/queues/watch.py): the ids of the tickets that
# left the pool, run together (each is 32 hex digits), on the queue's events channel.
_PUBLISH = """
local function publish(ids)
  if #ids > 0 then
    redis.call('PUBLISH', string.sub(KEYS[1], 1, -5) .. 'events', table.concat(ids))
  end
end
"""

# What a claim kept for a requeue (record.kept), as {id, pool value, hold expiry text} per ticket.
_KEPT = f"""
local function unkeep(kept)
  local tickets, at = {{}}, 1
  while at <= #kept do
    local value = at + {KEPT_ID_BYTES + KEPT_LENGTH_BYTES}
    local length = struct.unpack('<I{KEPT_LENGTH_BYTES}', kept, at + {KEPT_ID_BYTES})
    local text = string.byte(kept, value + length)
    tickets[#tickets + 1] = {{
      string.sub(kept, at, at + {KEPT_ID_BYTES - 1}),
      string.sub(kept, value, value + length - 1),
      string.sub(kept, value + length + 1, value + length + text),
    }}
    at = value + length + 1 + text
  end
  return tickets
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

# KEYS: pool, a ticket's done hash. ARGV: the ticket's id. Returns {its pool value, its status},
# each false when absent, read at one instant. Two reads one after the other could find the
# ticket in neither: a failed ready check or a requeue moves it from its status back to the
# pool (_PUTBACK) in one step, which may fall between them.
READ_TICKET = """
return {redis.call('HGET', KEYS[1], ARGV[1]), redis.call('HGET', KEYS[2], ARGV[1])}
"""

# KEYS: pool, holders, then the done hashes of tickets with an extension (extension.py).
# ARGV: now, expires_at, seconds to keep an extension, then per ticket: id, pool value, the
#       number of its done hash in KEYS (0: no extension), its extension's JSON (or empty),
#       player count, the players.
# A player's hold is "<expires_at> <ticket>" (store.hold), and counts until expires_at.
# Returns per ticket 0 (queued) or the 1-based position of a player already holding a ticket
# (an earlier ticket of the batch counts). A ticket whose players already hold it is this very
# call run again (redis-py retries a call whose connection dropped, maybe after the script ran,
# and on a cluster the promoted replica may hold the first run's write): it reads as queued,
# and is not written again (it may have been matched since).
ENQUEUE = (
    _CHUNKED
    + _FINISH
    + """
local pool, holders = KEYS[1], KEYS[2]
local now, expires, kept, n = tonumber(ARGV[1]), ARGV[2], ARGV[3], #ARGV
local names, at = {}, 4
while at <= n do
  local players = tonumber(ARGV[at + 4])
  for i = 1, players do names[#names + 1] = ARGV[at + 4 + i] end
  at = at + 5 + players
end
local held = chunked('HMGET', holders, names)
local out, fields, holds, taken, extended, k = {}, {}, {}, {}, {}, 0
at = 4
while at <= n do
  local id, players = ARGV[at], tonumber(ARGV[at + 4])
  local clash, again = 0, false
  for i = 1, players do
    local hold = held[k + i]
    if hold and string.sub(hold, -33) == ' ' .. id then
      again = true
    elseif taken[ARGV[at + 4 + i]] or (hold and tonumber(string.match(hold, '^%S+')) > now) then
      clash = i
      break
    end
  end
  if clash == 0 and not again then
    fields[#fields + 1] = id
    fields[#fields + 1] = ARGV[at + 1]
    local hold = expires .. ' ' .. id
    for i = 1, players do
      local name = ARGV[at + 4 + i]
      taken[name] = true
      holds[#holds + 1] = name
      holds[#holds + 1] = hold
    end
    local done = tonumber(ARGV[at + 2])
    if done > 0 then
      extended[done] = extended[done] or {}
      table.insert(extended[done], 'x:' .. id)
      table.insert(extended[done], ARGV[at + 3])
    end
  end
  out[#out + 1] = clash
  k = k + players
  at = at + 5 + players
end
if #fields > 0 then
  for key, pairs_ in pairs(extended) do finish(KEYS[key], pairs_, kept) end
  chunked('HSET', pool, fields)
  chunked('HSET', holders, holds)
end
return out
"""
)

# KEYS: pool, holders, deadlines, then the done hashes (the proposals' first, then the tickets').
# ARGV: seconds to keep what is written, the ready check's deadline ("0": none), then per
#       proposal: its id, its JSON, what a requeue needs (store.py), its ticket count, and per
#       ticket: id, the number of its done hash in KEYS, its players' hold, player count, the players.
# A proposal is claimed when every player of every ticket still holds that ticket's hold:
# a hold is written with its ticket and released when the ticket leaves the pool (or left
# alone when another ticket has taken it over), so an unchanged hold is a ticket still
# waiting whose players have queued nothing since. store.py checks expiry and attributes
# from the pool it read (a pool value never changes) before calling. A matched player's
# hold becomes "0 <ticket>": it no longer blocks queueing, and still finds the match. Under a
# ready check it becomes "<deadline> <ticket>" instead: the player's ticket stays active (no
# second one) until the proposal settles (SETTLE) or, should no sweeper ever come, until the
# deadline; the proposal's ready check starts ("s:<proposal>", no answers yet) and its deadline
# joins the deadlines sorted set, which every instance sweeps.
# A proposal already in KEYS[4] was claimed by this very call run before (ids are random; see
# ENQUEUE on retries): it counts as claimed, unwritten. Returns the 1-based numbers of the
# proposals claimed.
_CLAIMING = (
    _CHUNKED
    + _FINISH
    + _PUBLISH
    + """
local function claim(start, may, won)
local pool, holders, deadlines, kept, deadline, n = KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], #ARGV
local matched = deadline == '0' and '0 ' or deadline .. ' '
local names, starts, at = {}, {}, start
while at <= n do
  starts[#starts + 1] = at
  at = at + 4
  for t = 1, tonumber(ARGV[at - 1]) do
    local players = tonumber(ARGV[at + 3])
    for i = 1, players do names[#names + 1] = ARGV[at + 3 + i] end
    at = at + 4 + players
  end
end
local held = chunked('HMGET', holders, names)
local proposals = {}
for p = 1, #starts do proposals[p] = ARGV[starts[p]] end
local made = chunked('HMGET', KEYS[4], proposals)
local k, taken, claimed, gone, released, done, due = 0, {}, {}, {}, {}, {[4] = {}}, {}
for p = 1, #starts do
  local first, tickets, free = starts[p], tonumber(ARGV[starts[p] + 3]), true
  local again = made[p] ~= false
  at = first + 4
  for t = 1, tickets do
    local hold, players = ARGV[at + 2], tonumber(ARGV[at + 3])
    if taken[ARGV[at]] then free = false end
    for i = 1, players do
      if held[k + i] ~= hold then free = false end
    end
    k = k + players
    at = at + 4 + players
  end
  if again then
    claimed[#claimed + 1] = p
  elseif free and may(p) then
    local status = 'matched ' .. ARGV[first]
    at = first + 4
    for t = 1, tickets do
      local id, key, players = ARGV[at], tonumber(ARGV[at + 1]), tonumber(ARGV[at + 3])
      taken[id] = true
      gone[#gone + 1] = id
      local fields = done[key]
      if not fields then
        fields = {}
        done[key] = fields
      end
      fields[#fields + 1] = id
      fields[#fields + 1] = status
      for i = 1, players do
        released[#released + 1] = ARGV[at + 3 + i]
        released[#released + 1] = matched .. id
      end
      at = at + 4 + players
    end
    local proposal = done[4]
    proposal[#proposal + 1] = ARGV[first]
    proposal[#proposal + 1] = ARGV[first + 1]
    proposal[#proposal + 1] = 'r:' .. ARGV[first]
    proposal[#proposal + 1] = ARGV[first + 2]
    if deadline ~= '0' then
      proposal[#proposal + 1] = 's:' .. ARGV[first]
      proposal[#proposal + 1] = '{"answers":{},"deadline":' .. deadline .. '}'
      due[#due + 1] = deadline
      due[#due + 1] = ARGV[first]
    end
    won(p, proposal, ARGV[first])
    claimed[#claimed + 1] = p
  end
end
if #claimed > 0 then
  chunked('HDEL', pool, gone)
  chunked('HSET', holders, released)
  for key, fields in pairs(done) do finish(KEYS[key], fields, kept) end
  if #due > 0 then chunked('ZADD', deadlines, due) end
  publish(gone)
end
return claimed
end
"""
)

CLAIM = _CLAIMING + "return claim(3, function() return true end, function() end)\n"

# Backfills (docs/api.md): a fill is a proposal claimed as CLAIM claims one, and only while its
# backfill's record (mm:v4:{mode}:backfills, a JSON object with a "version") still has the
# version the fill was chosen from, unexpired: two matchmaking calls never fill one slot twice,
# and the holds keep a ticket out of a backfill and a match at once. The claim writes the
# backfill's new record (its roster with the new players, its version one up), names the new
# players in mm:v4:{mode}:rostered, and publishes the backfill's id (its long-polls wake). The
# fills' records, names and ids are written once the claim is decided, in one command each for
# all the fills (one message on the events channel), not one per fill.
# Under a ready check the roster's own players count as accepted from the start ("s:").
# KEYS: as CLAIM's, then the backfills hash and the rostered hash (their numbers: ARGV[3], +1).
# ARGV: seconds to keep, deadline ("0": none), the backfills hash's number in KEYS, now, the
#       fill count, per fill: backfill id, expected version, new record, the roster's answers'
#       JSON ("" without a ready check), new player count, the new players; then per proposal
#       (fill f is proposal f) as CLAIM's. Returns the 1-based numbers of the fills claimed.
BACKFILL_CLAIM = (
    _CLAIMING
    + """
local b, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local backfills, rostered = KEYS[b], KEYS[b + 1]
local fill, ids, at = {}, {}, 6
for f = 1, tonumber(ARGV[5]) do
  local players = tonumber(ARGV[at + 4])
  fill[f] = {ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2], ARGV[at + 3], at + 5, players}
  ids[f] = ARGV[at]
  at = at + 5 + players
end
local current = chunked('HMGET', backfills, ids)
local function may(p)
  if not current[p] then return false end
  local record = cjson.decode(current[p])
  return record.version == fill[p][2] and record.expires_at > now
end
-- The fills' writes, made once the claim is decided: one command each for all of them.
local records, named, woken = {}, {}, {}
local function won(p, proposal, id)
  local f = fill[p]
  records[#records + 1] = f[1]
  records[#records + 1] = f[3]
  for i = f[5], f[5] + f[6] - 1 do
    named[#named + 1] = ARGV[i]
    named[#named + 1] = f[1]
  end
  if f[4] ~= '' then
    proposal[#proposal + 1] = 's:' .. id
    proposal[#proposal + 1] = '{"answers":' .. f[4] .. ',"deadline":' .. ARGV[2] .. '}'
  end
  woken[#woken + 1] = f[1]
end
local claimed = claim(at, may, won)
if #records > 0 then chunked('HSET', backfills, records) end
if #named > 0 then chunked('HSET', rostered, named) end
publish(woken)
return claimed
"""
)

# Creates, replaces or deletes a backfill's record. KEYS: pool, holders, backfills, rostered.
# ARGV: the backfill's id, now, the version expected ("new": none yet; "*": any), the new record
# ("": delete), the count of the new roster's players, them. A player new to the roster may
# not be on another live backfill's roster, nor hold an active ticket (queued, or in a pending
# proposal); players who leave the roster leave mm:v4:{mode}:rostered. An expired record reads
# as unknown (and goes). Publishes the backfill's id. Returns {"ok"}, {"unknown"},
# {"stale", version}, {"rostered", player, backfill} or {"queued", player}. A create whose id
# exists already is this very call run again (random ids; see ENQUEUE on retries): "ok".
BACKFILL_PUT = (
    _PUBLISH
    + """
local pool, holders, backfills, rostered = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, now, expected, record = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local current = redis.call('HGET', backfills, id)
if expected == 'new' and current then return {'ok'} end
local old = current and cjson.decode(current)
local function roster(of)
  local names = {}
  if not of then return names end
  for _, team in ipairs(of.teams) do
    for _, name in ipairs(team) do names[name] = true end
  end
  for _, pending in ipairs(of.fills or {}) do
    for _, team in ipairs(pending.teams) do
      for _, name in ipairs(team) do names[name] = true end
    end
  end
  return names
end
local before = roster(old)
local function drop(names)
  if #names == 0 then return end
  local on = redis.call('HMGET', rostered, unpack(names))
  local gone = {}
  for i, name in ipairs(names) do
    if on[i] == id then gone[#gone + 1] = name end
  end
  if #gone > 0 then redis.call('HDEL', rostered, unpack(gone)) end
end
if expected ~= 'new' then
  if not old or old.expires_at <= now then
    if old then
      local names = {}
      for name in pairs(before) do names[#names + 1] = name end
      drop(names)
      redis.call('HDEL', backfills, id)
    end
    return {'unknown'}
  end
  if expected ~= '*' and old.version ~= tonumber(expected) then return {'stale', tostring(old.version)} end
end
local names, keep, fresh = {}, {}, {}
for i = 6, 5 + tonumber(ARGV[5]) do
  names[#names + 1] = ARGV[i]
  keep[ARGV[i]] = true
  if not before[ARGV[i]] then fresh[#fresh + 1] = ARGV[i] end
end
if #fresh > 0 then
  local on = redis.call('HMGET', rostered, unpack(fresh))
  for i, name in ipairs(fresh) do
    if on[i] and on[i] ~= id then
      local theirs = redis.call('HGET', backfills, on[i])
      theirs = theirs and cjson.decode(theirs)
      if theirs and theirs.expires_at > now and roster(theirs)[name] then
        return {'rostered', name, on[i]}
      end
    end
  end
  local held = redis.call('HMGET', holders, unpack(fresh))
  for i, name in ipairs(fresh) do
    if held[i] and tonumber(string.match(held[i], '^%S+')) > now then return {'queued', name} end
  end
end
local leaving = {}
for name in pairs(before) do
  if not keep[name] then leaving[#leaving + 1] = name end
end
drop(leaving)
if record == '' then
  redis.call('HDEL', backfills, id)
else
  redis.call('HSET', backfills, id, record)
  local named = {}
  for _, name in ipairs(names) do
    named[#named + 1] = name
    named[#named + 1] = id
  end
  if #named > 0 then redis.call('HSET', rostered, unpack(named)) end
end
publish({id})
return {'ok'}
"""
)

# What a script that takes waiting tickets out of the pool (cancel, expiry) runs on.
_LEAVING = _CHUNKED + _FINISH + _PARSE + _RELEASE + _PUBLISH

# KEYS: pool, holders, the ticket's done hash. ARGV: the ticket's id, seconds to keep its status.
# Returns -1 unknown, 1 cancelled (or already finished), 2 already matched.
CANCEL = (
    _LEAVING
    + """
local pool, holders, done, id = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local value = redis.call('HGET', pool, id)
if value then
  local _, players = parse(value)
  redis.call('HDEL', pool, id)
  finish(done, {id, 'cancelled'}, ARGV[2])
  local owners = {}
  for _, name in ipairs(players) do owners[name] = id end
  release(holders, owners)
  publish({id})
  return 1
end
local status = redis.call('HGET', done, id)
if not status then return -1 end
if string.sub(status, 1, 8) == 'matched ' then return 2 end
return 1
"""
)

# KEYS: pool, holders, then done hashes. ARGV: now, seconds to keep a status, then per ticket
# its id and the number of its done hash in KEYS. Each ticket still waiting past its own
# expiry leaves the pool and reads as expired. Returns how many did.
EXPIRE = (
    _LEAVING
    + """
local pool, holders = KEYS[1], KEYS[2]
local now, kept = tonumber(ARGV[1]), ARGV[2]
local ids, where = {}, {}
for i = 3, #ARGV, 2 do
  ids[#ids + 1] = ARGV[i]
  where[#where + 1] = tonumber(ARGV[i + 1])
end
local values = chunked('HMGET', pool, ids)
local gone, owners, done = {}, {}, {}
for i = 1, #ids do
  if values[i] then
    local expires, players = parse(values[i])
    if expires <= now then
      gone[#gone + 1] = ids[i]
      local fields = done[where[i]] or {}
      done[where[i]] = fields
      fields[#fields + 1] = ids[i]
      fields[#fields + 1] = 'expired'
      for _, name in ipairs(players) do owners[name] = ids[i] end
    end
  end
end
if #gone > 0 then chunked('HDEL', pool, gone) end
for key, fields in pairs(done) do finish(KEYS[key], fields, kept) end
release(holders, owners)
publish(gone)
return #gone
"""
)

# Puts a proposal's tickets back (REQUEUE, and SETTLE when a ready check fails). What the claim
# kept under "r:<proposal>" is record.kept() per ticket (_KEPT reads it). A ticket that
# `cancelled(id, players)` names is cancelled; any other goes back to the pool with that very
# value (its enqueue time, so its wait, kept) and its players' holds as they were, unless it is
# past its expiry (expired) or one of its players holds a newer ticket, queued or matched
# (then it is cancelled: the player is in no two tickets). The proposal then reads as
# requeued. `where` maps each ticket to the number of its done hash in KEYS. Returns per
# ticket, in the proposal's order: 0 cancelled as named, 1 queued, 2 cancelled for a newer
# ticket, 3 expired; nil when the proposal was requeued before.
_PUTBACK = """
local function putback(pool, holders, done, proposal, now, kept, where, cancelled)
  local kept_tickets = redis.call('HGET', done, 'r:' .. proposal)
  if not kept_tickets or kept_tickets == 'requeued' then return nil end
  local tickets = unkeep(kept_tickets)
  local names, members = {}, {}
  for t = 1, #tickets do
    local _, players = parse(tickets[t][2])
    members[t] = players
    for _, name in ipairs(players) do names[#names + 1] = name end
  end
  local held = chunked('HMGET', holders, names)
  local out, back, holds, released, statuses, cleared, ids, k = {}, {}, {}, {}, {}, {}, {}, 0
  for t = 1, #tickets do
    local id, value, expiry = tickets[t][1], tickets[t][2], tickets[t][3]
    local players, code = members[t], 1
    ids[#ids + 1] = id
    if cancelled(id, players) then
      code = 0
    elseif tonumber(expiry) <= now then
      code = 3
    else
      for i = 1, #players do
        local hold = held[k + i]
        if hold and string.sub(hold, -33) ~= ' ' .. id then
          local until_ = tonumber(string.match(hold, '^%S+'))
          if until_ == 0 or until_ > now then code = 2 end
        end
      end
    end
    out[#out + 1] = code
    local key = where[id]
    if code == 1 then
      back[#back + 1] = id
      back[#back + 1] = value
      for i = 1, #players do
        holds[#holds + 1] = players[i]
        holds[#holds + 1] = expiry .. ' ' .. id
      end
      cleared[key] = cleared[key] or {}
      table.insert(cleared[key], id)
    else
      for i = 1, #players do
        local hold = held[k + i]
        if hold and string.sub(hold, -33) == ' ' .. id then released[#released + 1] = players[i] end
      end
      statuses[key] = statuses[key] or {}
      table.insert(statuses[key], id)
      table.insert(statuses[key], code == 3 and 'expired' or 'cancelled')
    end
    k = k + #players
  end
  if #back > 0 then
    chunked('HSET', pool, back)
    chunked('HSET', holders, holds)
  end
  if #released > 0 then chunked('HDEL', holders, released) end
  for key, list in pairs(cleared) do chunked('HDEL', KEYS[key], list) end
  for key, fields in pairs(statuses) do finish(KEYS[key], fields, kept) end
  finish(done, {'r:' .. proposal, 'requeued'}, kept)
  publish(ids)
  return out
end
"""

# A proposal's JSON starts with its id, then its state (ProposalOut's first fields), so a script
# reads and rewrites the state at a known place, whatever the players are called. A proposal
# an earlier release wrote has no state: it was accepted as formed.
_STATE = """
local function state_head(proposal)
  return '{"proposal_id":"' .. proposal .. '","state":"'
end
local function state_of(body, proposal)
  local head = state_head(proposal)
  if string.sub(body, 1, #head) ~= head then return 'accepted' end
  return string.match(body, '^(%a+)"', #head + 1)
end
local function set_state(done, proposal, state, kept)
  local body = redis.call('HGET', done, proposal)
  if not body then return end
  local head, old = state_head(proposal), state_of(body, proposal)
  if old == state or string.sub(body, 1, #head) ~= head then return end
  finish(done, {proposal, head .. state .. string.sub(body, #head + #old + 1)}, kept)
end
"""

_SETTLING = _CHUNKED + _FINISH + _PARSE + _KEPT + _PUBLISH + _PUTBACK + _STATE

# KEYS: pool, holders, deadlines, the proposal's done hash, then the tickets' done hashes.
# ARGV: the proposal's id, now, seconds to keep a status, the number of tickets to cancel,
#       their ids, then per ticket of the proposal its id and the number of its done hash.
# Undoes a proposal (_PUTBACK): the listed tickets are cancelled, the others go back. A proposal
# so undone did not become a game: it reads as failed, and a pending ready check ends.
# Returns _PUTBACK's codes; nothing when the proposal was requeued before.
REQUEUE = (
    _SETTLING
    + """
local pool, holders, deadlines, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local proposal, now, kept = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local cancel, listed = {}, tonumber(ARGV[4])
for i = 5, 4 + listed do cancel[ARGV[i]] = true end
local where = {}
for i = 5 + listed, #ARGV, 2 do where[ARGV[i]] = tonumber(ARGV[i + 1]) end
local out = putback(pool, holders, done, proposal, now, kept, where, function(id) return cancel[id] end)
if not out then return {} end
set_state(done, proposal, 'failed', kept)
redis.call('ZREM', deadlines, proposal)
return out
"""
)

# The ready check (docs/api.md). KEYS: pool, holders, deadlines, the proposal's done hash, then
# its tickets' done hashes. ARGV: the proposal's id, now, seconds to keep a status, the answer
# ("accepted", "declined", or "expired": the deadline's sweep), the number of players
# answering, them, then per ticket of the proposal its id and the number of its done hash.
# The check's record, "s:<proposal>", is {"answers": {player: answer}, "deadline": seconds}.
# While the proposal is pending, answers are recorded; a decline, or the deadline passed, fails
# it: the tickets of players who did not accept are cancelled and the others go back to the
# pool (_PUTBACK) in this same step; once every player has accepted it is accepted, and the
# players' holds become "0 <ticket>" (they may queue again). Each change of state publishes
# the proposal's tickets, waking their long-polls on every instance. A settled proposal takes
# the answer each player gave again (a proposal made without a ready check: "accepted").
# Whichever instance's sweeper runs it first fails an expired proposal; the others find it
# settled. Returns {state, record}, {"conflict", state, record, player} for an answer
# that differs from the settled one, or {"unknown"}.
SETTLE = (
    _SETTLING
    + """
local pool, holders, deadlines, done = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local proposal, now, kept, answer = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local count = tonumber(ARGV[5])
local where = {}
for i = 6 + count, #ARGV, 2 do where[ARGV[i]] = tonumber(ARGV[i + 1]) end
local body = redis.call('HGET', done, proposal)
if not body then
  redis.call('ZREM', deadlines, proposal)
  return {'unknown'}
end
local state = state_of(body, proposal)
local check = redis.call('HGET', done, 's:' .. proposal)
if state == 'pending' and redis.call('HGET', done, 'r:' .. proposal) == 'requeued' then
  -- Requeued by a release that knows no ready check: it did not become a game.
  state = 'failed'
  set_state(done, proposal, state, kept)
  redis.call('ZREM', deadlines, proposal)
end
local record = check and cjson.decode(check) or {answers = {}, deadline = 0}
local answers = record.answers
if state ~= 'pending' then
  if answer == 'expired' then
    redis.call('ZREM', deadlines, proposal)
  else
    for i = 6, 5 + count do
      local had = answers[ARGV[i]]
      if not check then had = 'accepted' end
      if had ~= answer then return {'conflict', state, check or '', ARGV[i]} end
    end
  end
  return {state, check or ''}
end
if answer == 'expired' then
  if record.deadline > now then return {state, check} end
else
  for i = 6, 5 + count do answers[ARGV[i]] = answer end
end
local everyone = true
for _, team in ipairs(cjson.decode(body).teams) do
  for _, name in ipairs(team) do
    if answers[name] ~= 'accepted' then everyone = false end
  end
end
local settled = 'pending'
if answer ~= 'accepted' then
  settled = 'failed'
elseif everyone then
  settled = 'accepted'
end
check = cjson.encode(record)
finish(done, {'s:' .. proposal, check}, kept)
if settled == 'pending' then return {settled, check} end
redis.call('ZREM', deadlines, proposal)
set_state(done, proposal, settled, kept)
if settled == 'failed' then
  local out = putback(pool, holders, done, proposal, now, kept, where, function(_, players)
    for _, name in ipairs(players) do
      if answers[name] ~= 'accepted' then return true end
    end
    return false
  end)
  return {settled, check}
end
local kept_tickets = redis.call('HGET', done, 'r:' .. proposal)
if kept_tickets and kept_tickets ~= 'requeued' then
  local ids, names, owner = {}, {}, {}
  for _, ticket in ipairs(unkeep(kept_tickets)) do
    local _, players = parse(ticket[2])
    ids[#ids + 1] = ticket[1]
    for _, name in ipairs(players) do
      names[#names + 1] = name
      owner[#names] = ticket[1]
    end
  end
  local held = chunked('HMGET', holders, names)
  local holds = {}
  for i = 1, #names do
    if held[i] and string.sub(held[i], -33) == ' ' .. owner[i] then
      holds[#holds + 1] = names[i]
      holds[#holds + 1] = '0 ' .. owner[i]
    end
  end
  if #holds > 0 then chunked('HSET', holders, holds) end
  publish(ids)
end
return {settled, check}
"""
)

# Erasure (app.erasure): KEYS: holders. ARGV: a player, the hold read for them.
# Deletes the player's hold only if it is still that one (a newer ticket's hold stays).
FORGET_HOLD = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0
"""

# Erasure: KEYS: one done hash. ARGV: a player's id and its pseudonym, each in JSON quotes.
# Renames the player in the teams and roles of every proposal the hash holds, and in the
# players of what a requeue of it would put back (the "r:" fields, record.kept's layout, read
# by unkeep); such a ticket's expiry becomes 0, so a requeue reads it as expired and never
# queues it again. Takes the player out of every ticket's avoid list (the "x:" fields,
# extension.py: JSON; an emptied list goes), and renames them in ready checks' answers (the
# "s:" fields). Statuses name no player. Returns how many fields changed.
ERASE_PLAYER = (
    _CHUNKED
    + _KEPT
    + f"""
local key, old, new = KEYS[1], ARGV[1], ARGV[2]
local pattern = string.gsub(old, '%p', '%%%0')
local replacement = string.gsub(new, '%%', '%%%%')
local all = redis.call('HGETALL', key)
local changed = {{}}
for i = 1, #all, 2 do
  local field, value = all[i], all[i + 1]
  if string.find(value, old, 1, true) then
    if string.sub(field, 1, 2) == 'r:' then
      local out = {{}}
      for _, ticket in ipairs(unkeep(value)) do
        local id, pooled, expiry = ticket[1], ticket[2], ticket[3]
        local players = struct.unpack('<d', pooled, {lua_position(HeaderField.PLAYERS)})
        local regions = struct.unpack('<d', pooled, {lua_position(HeaderField.REGIONS)})
        local after = {HEADER_BYTES + 1} + {PLAYER_BYTES} * players + {REGION_BYTES} * regions
        local names = string.find(pooled, '\\n', after, true)
        local cut = string.find(pooled, '\\n', names + 1, true)
        local list = string.sub(pooled, cut + 1)
        if string.find(list, old, 1, true) then
          pooled = string.sub(pooled, 1, cut) .. (string.gsub(list, pattern, replacement))
          expiry = '0'
        end
        out[#out + 1] = id .. struct.pack('<I{KEPT_LENGTH_BYTES}', #pooled) .. pooled
          .. string.char(#expiry) .. expiry
      end
      value = table.concat(out)
    elseif string.sub(field, 1, 2) == 's:' then
      -- A ready check's answers: the player is a key, "<id>":.
      value = string.gsub(value, pattern .. ':', replacement .. ':')
    elseif string.sub(field, 1, 2) == 'x:' then
      local extension = cjson.decode(value)
      local kept_ids = {{}}
      for _, name in ipairs(extension.avoid or {{}}) do
        if '"' .. name .. '"' ~= old then kept_ids[#kept_ids + 1] = name end
      end
      if #kept_ids > 0 then extension.avoid = kept_ids else extension.avoid = nil end
      value = next(extension) and cjson.encode(extension) or ''
    else
      local first = string.find(value, '"teams":[', 1, true)
      local last = first and string.find(value, '],"ticket_ids":', first, true)
      if last then
        local teams = string.gsub(string.sub(value, first, last), pattern, replacement)
        value = string.sub(value, 1, first - 1) .. teams .. string.sub(value, last + 1)
      end
      -- In the roles map the player is a key: "<id>":, never a role's name.
      first = string.find(value, '"roles":{{', 1, true)
      last = first and string.find(value, '}}', first, true)
      if last then
        local roles = string.gsub(string.sub(value, first, last), pattern .. ':', replacement .. ':')
        value = string.sub(value, 1, first - 1) .. roles .. string.sub(value, last + 1)
      end
    end
    changed[#changed + 1] = field
    changed[#changed + 1] = value
  end
end
if #changed > 0 then chunked('HSET', key, changed) end
return #changed / 2
"""
)

# Erasure: KEYS: backfills, rostered. ARGV: a player's id and its pseudonym, each in JSON quotes.
# Renames the player, as ERASE_PLAYER renames them in proposals, in every backfill's record
# (backfill_store.py): in the roster's "teams" and in each pending fill's (which mirror a
# fill's proposal, renamed by ERASE_PLAYER too, so an accepted fill still seats the pseudonym
# in the slot it took). The player's slot stays taken: the game still has them, under no name.
# A record it changes gets its version one up, so a fill chosen from the record as read before
# claims nothing (BACKFILL_CLAIM would write that record back, naming the player), and its id
# goes out on the events channel (its long-polls answer). The player's rostered entry goes; the
# pseudonym gets none (clients cannot name a pseudonym, so no roster can take it twice). The
# record is edited as text, not re-encoded: cjson would round its numbers (14 digits). Player
# ids hold no brackets or quotes, so each "teams" value is one balanced [...] whose strings are
# whole ids, and a quoted id found there is a player. Returns how many fields changed (records
# and the rostered entry).
ERASE_BACKFILLS = (
    _CHUNKED
    + """
local backfills, rostered, old, new = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local pattern = string.gsub(old, '%p', '%%%0')
local replacement = string.gsub(new, '%%', '%%%%')
local function renamed(value)
  local out, at = {}, 1
  while true do
    local key = string.find(value, '"teams":', at, true)
    if not key then break end
    local first, last = string.find(value, '%b[]', key + 8)
    out[#out + 1] = string.sub(value, at, first - 1)
    out[#out + 1] = (string.gsub(string.sub(value, first, last), pattern, replacement))
    at = last + 1
  end
  out[#out + 1] = string.sub(value, at)
  return table.concat(out)
end
local all = redis.call('HGETALL', backfills)
local changed, ids = {}, {}
for i = 1, #all, 2 do
  local id, value = all[i], all[i + 1]
  if string.find(value, old, 1, true) then
    local after = renamed(value)
    if after ~= value then
      after = string.gsub(after, '"version":(%d+)', function(version)
        return '"version":' .. string.format('%d', tonumber(version) + 1)
      end, 1)
      changed[#changed + 1] = id
      changed[#changed + 1] = after
      ids[#ids + 1] = id
    end
  end
end
if #changed > 0 then chunked('HSET', backfills, changed) end
local dropped = redis.call('HDEL', rostered, string.sub(old, 2, -2))
if #ids > 0 then
  -- The events channel beside the backfills hash (store.py): KEYS[1] ends in "backfills".
  redis.call('PUBLISH', string.sub(backfills, 1, -10) .. 'events', table.concat(ids))
end
return #ids + dropped
"""
)
