"""Queue statistics in Redis: what recent matches were like, who waits, and wait estimates.

Keys beside the queue's own (store.py), under the same prefix and hash tag, new in this release
of the layout (docs/upgrades.md: older releases never read them):

    mm:v4:{mode}:stats:<q>    hash per quarter minute q (Unix seconds // 15): "m" -> matches
                              formed, "t" -> tickets matched, "w<bin>" -> tickets whose wait fell
                              in that bin, "q<bin>" -> matches whose quality did (waits.py)
    mm:v4:{mode}:waits:<q>    hash per quarter minute: "<class>#<bin>" -> tickets of that class
                              (skill band and region, waits.py) whose wait fell in that bin,
                              "<class>@<calls>" -> those that sat through that many calls
    mm:v4:{mode}:estimates    hash: a class -> the waits its estimate reads ("<bin>:<count>"
                              pairs, space separated), "k:<class>" -> the calls sat through
                              ("<calls>:<count>"), "beta" -> the band width they were counted
                              with
    mm:v4:{mode}:pulse        hash: the latest matchmaking call's start ("at"), the mean interval
                              between calls, its answer's delay (fields "n:…" and "a:…" of
                              earlier releases are no longer written nor read)
    mm:v4:{mode}:waiting      string: the waiting tickets and players, by region, as counted
                              at "counted_at" (JSON)

A matchmaking call adds its matches to the current quarter's hashes (RECORD), which expire
after the longest window: the structure is bounded by 61 hashes of at most a few hundred
counters, whatever the traffic. Reading the statistics is one script (READ): the waiting
counts, which every matchmaking call refreshes from the pool it read anyway, and those hashes
merged (MERGE). A read walks the pool only when no matchmaking call counted it for the
counts' lifetime (KEEP_S). Recording is
not in the claim's script: an instance that dies between the two leaves its last call's
matches uncounted (statistics, not bookkeeping).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.infra.redis_client import RedisClient
from app.matchmaking import waits
from app.matchmaking.pool import Pool
from app.queues import record
from app.queues.record import HeaderField
from app.queues.scripts import reply_text, run

QUARTER_S = 15
# The windows the statistics report, in minutes, and the quarters each merges (the current,
# partial one and the whole ones before it).
WINDOWS_MIN = (1, 5, 15)
QUARTERS = [minutes * 60 // QUARTER_S + 1 for minutes in WINDOWS_MIN]
KEEP_S = WINDOWS_MIN[-1] * 60 + 2 * QUARTER_S
# A class's estimate reads the shortest window holding at least this many waits of its own.
ESTIMATE_SAMPLES = 20
# How often the estimates are rebuilt from the waits (by whichever matchmaking call comes).
ESTIMATE_REFRESH_S = 2.0

# KEYS: the current quarter's stats hash, its waits hash. ARGV: seconds to keep them, the
# number of stats fields, then (field, increment) pairs for the stats hash, then for the waits.
RECORD = """
local kept, count = ARGV[1], tonumber(ARGV[2])
local function add(key, first, last)
  for i = first, last, 2 do redis.call('HINCRBY', key, ARGV[i], ARGV[i + 1]) end
  redis.call('EXPIRE', key, kept)
end
add(KEYS[1], 3, 2 + 2 * count)
if #ARGV > 2 + 2 * count then add(KEYS[2], 3 + 2 * count, #ARGV) end
return 0
"""

# KEYS: the pulse hash. ARGV: when a matchmaking call started, how long it took to answer,
# seconds to keep the hash. The interval between calls is averaged (weight 0.2 to the latest
# gap; gaps of a minute or more, a loop that stopped, do not count). Returns the interval.
PULSE = """
local key, now = KEYS[1], tonumber(ARGV[1])
local last = tonumber(redis.call('HGET', key, 'at') or '0')
local interval = tonumber(redis.call('HGET', key, 'interval') or '0')
local gap = now - last
if last > 0 and gap > 0 and gap < 60 then
  if interval > 0 then interval = 0.8 * interval + 0.2 * gap else interval = gap end
end
redis.call('DEL', key)
redis.call('HSET', key, 'at', ARGV[1], 'interval', tostring(interval), 'duration', ARGV[2])
redis.call('EXPIRE', key, ARGV[3])
return tostring(interval)
"""

# KEYS: quarter hashes, newest first. ARGV: how many of them each window takes (ascending).
# Returns per window its hashes' counters added up, as a flat field, count list.
MERGE_BODY = """
local sums, out, window = {}, {}, 1
for k = FIRST, #KEYS do
  local all = redis.call('HGETALL', KEYS[k])
  for i = 1, #all, 2 do sums[all[i]] = (sums[all[i]] or 0) + tonumber(all[i + 1]) end
  while window <= #ARGV and tonumber(ARGV[window]) == k - FIRST + 1 do
    local flat = {}
    for field, count in pairs(sums) do
      flat[#flat + 1] = field
      flat[#flat + 1] = count
    end
    out[window] = flat
    window = window + 1
  end
end
"""
MERGE = "local FIRST = 1\n" + MERGE_BODY + "return out\n"
# The statistics' read, one round trip: KEYS[1] the waiting counts, then MERGE's. Returns the
# counts' text (false when none) and MERGE's windows.
READ = "local FIRST = 2\n" + MERGE_BODY + "return {redis.call('GET', KEYS[1]), out}\n"


@dataclass(frozen=True, slots=True)
class Window:
    minutes: int
    matches: int
    tickets: int
    waits: dict[int, int]  # bin -> tickets
    qualities: dict[int, int]  # bin -> matches


@dataclass(frozen=True, slots=True)
class Waiting:
    """The waiting tickets and players, per region (None: tickets with no region)."""

    counted_at: float
    by_region: dict[str | None, tuple[int, int]]


class QueueStatistics:
    """The statistics of one mode's queue."""

    def __init__(self, redis: RedisClient, mode: str) -> None:
        self.redis = redis
        self.prefix = f"mm:v4:{{{mode}}}:"

    def _quarters(self, kind: str, now: float) -> list[str]:
        current = int(now // QUARTER_S)
        return [f"{self.prefix}{kind}:{current - back}" for back in range(QUARTERS[-1])]

    async def record(
        self,
        now: float,
        qualities: Sequence[float],
        waited: np.ndarray,
        classes: Sequence[str],
        calls: Sequence[int],
    ) -> None:
        """Count a matchmaking call's matches: each one's quality, each ticket's wait, and by
        its class its wait and the calls it sat through (waits.calls_waited)."""
        if not len(qualities):
            return
        stats: dict[str, int] = {"m": len(qualities), "t": len(waited)}
        wait_bins = waits.wait_bins(np.asarray(waited, dtype=np.float64)).tolist()
        for bin_ in wait_bins:
            stats[f"w{bin_}"] = stats.get(f"w{bin_}", 0) + 1
        for bin_ in waits.quality_bins(np.asarray(qualities, dtype=np.float64)).tolist():
            stats[f"q{bin_}"] = stats.get(f"q{bin_}", 0) + 1
        by_class: dict[str, int] = {}
        for name, bin_, sat in zip(classes, wait_bins, calls, strict=True):
            for field in (f"{name}#{bin_}", f"{name}@{sat}"):
                by_class[field] = by_class.get(field, 0) + 1
        args: list[str | int] = [KEEP_S, len(stats)]
        for field, count in (*stats.items(), *by_class.items()):
            args += [field, count]
        keys = [self._quarters("stats", now)[0], self._quarters("waits", now)[0]]
        await run(self.redis, RECORD, keys, args)

    async def read(self, now: float) -> tuple[Waiting | None, list[Window]]:
        """The latest waiting counts and the windows' statistics, in one round trip: a script
        that reads a string and at most 61 small hashes, whatever the pool holds."""
        keys = [self.prefix + "waiting", *self._quarters("stats", now)]
        text, merged = await run(self.redis, READ, keys, QUARTERS, writes=False)
        return (_waiting(text) if text else None), _windows(merged)

    async def refresh_estimates(self, now: float, beta: float) -> None:
        """Rebuild every class's estimate: its waits and calls sat through over the shortest
        window that holds ESTIMATE_SAMPLES of its own, for the class itself and each wider one
        it counts in (waits.wider). A class with fewer than that even over the longest window
        is left out, so its tickets read a wider one; the whole queue is always kept."""
        merged = await run(self.redis, MERGE, self._quarters("waits", now), QUARTERS)
        chosen: dict[str, dict[int, int]] = {}
        for flat in merged:  # shortest window first: a class keeps the first that suffices
            per_class: dict[str, dict[int, int]] = {}
            for field, count in _pairs(flat).items():
                kind = "#" if "#" in field else "@"
                name, _, value = field.rpartition(kind)
                for target in (name, *waits.wider(name)):
                    counts = per_class.setdefault(("" if kind == "#" else "k:") + target, {})
                    counts[int(value)] = counts.get(int(value), 0) + count
            for name, counts in per_class.items():
                if name not in chosen and (
                    sum(counts.values()) >= ESTIMATE_SAMPLES or (flat is merged[-1] and name in ("*", "k:*"))
                ):
                    chosen[name] = counts
        fields: dict[Any, Any] = {
            name: " ".join(f"{b}:{c}" for b, c in sorted(counts.items())) for name, counts in chosen.items()
        }
        key = self.prefix + "estimates"
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping={**fields, "beta": repr(beta), "at": repr(now)})
            pipe.expire(key, KEEP_S)
            await pipe.execute()

    async def pulse(self, started: float, answered: float) -> float:
        """Note a matchmaking call (when it started, how long it took to answer); the calls'
        mean interval, this one counted (0 until there were two)."""
        args: list[str | int] = [repr(started), repr(answered - started), KEEP_S]
        return float(reply_text(await run(self.redis, PULSE, [self.prefix + "pulse"], args)))

    async def estimate(self, value: bytes, waited: float, now: float) -> float | None:
        """A queued ticket's expected wait in all (seconds from its enqueueing); None before
        any match of the mode was counted.

        A wait is the time to the next matchmaking call plus whole call intervals: the calls
        the ticket is expected to sit through are the lower median of those its class's
        matched tickets sat through (of those that sat through at least as many as this one
        already has); the next call's answer is placed by the calls' rhythm (the latest call's
        start, the mean interval, the latest answer's delay). Without a rhythm yet, or when none
        of the class's tickets sat through as many calls as this one, the median of the class's
        waits at least as long as this ticket's so far. A class with too few tickets lately
        (refresh_estimates) gives way to a wider one (waits.fallbacks).
        """
        key = self.prefix + "estimates"
        beta = await self.redis.hget(key, "beta")
        if beta is None:
            return None
        size = np.array([int(record.field_of(value, HeaderField.PLAYERS))])
        mu_sum = np.array([record.field_of(value, HeaderField.MU_SUM)])
        var_sum = np.array([record.field_of(value, HeaderField.VAR_SUM)])
        band = int(waits.skill_bands(mu_sum, size, float(beta))[0])
        uncertainty = int(waits.uncertainty_bands(var_sum, size, float(beta))[0])
        names = waits.fallbacks(band, uncertainty, ticket_region(value))
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hmget(key, [*(f"k:{name}" for name in names), *names])
            pipe.hmget(self.prefix + "pulse", ["at", "interval", "duration"])
            classes, pulse = await pipe.execute()
        rhythm = None
        if pulse[0] is not None and float(pulse[1]) > 0:
            at, interval, duration = (float(v) for v in pulse)
            queued_at = record.field_of(value, HeaderField.ENQUEUED_AT)
            # The calls that read the pool since the ticket was queued (the latest among them).
            sat = math.ceil((at - queued_at) / interval) if queued_at < at else 0
            rhythm = (max(0.0, at + interval - now) + duration, interval, sat)
        # The narrowest class that saw tickets wait as long as this one has: in calls when the
        # calls have a rhythm, else (or when none of its tickets sat through as many) in seconds.
        for calls_text, waits_text in zip(classes[: len(names)], classes[len(names) :], strict=True):
            if calls_text and rhythm is not None:
                to_next, interval, sat = rhythm
                calls = waits.median_calls(_counts(calls_text), sat)
                if calls is not None:
                    return waits.expected_wait(waited, to_next, interval, sat, calls)
            if waits_text:
                found = waits.median_beyond(_counts(waits_text), waited)
                if found is not None:
                    return found
        return None

    async def waiting(self) -> Waiting | None:
        text = await self.redis.get(self.prefix + "waiting")
        return None if text is None else _waiting(text)

    async def count_waiting(
        self, pool: Pool, regions: tuple[list[str | None], Any], left: Any, now: float
    ) -> Waiting:
        """Count the `left` rows of the pool (a boolean mask: the tickets still waiting) by
        region (pool_regions), and keep the counts for the statistics' readers."""
        names, codes = regions
        tickets = np.bincount(codes[left], minlength=len(names)).tolist()
        players = np.bincount(codes[left], weights=pool.size[left], minlength=len(names)).tolist()
        by_region = {name: (int(t), int(p)) for name, t, p in zip(names, tickets, players, strict=True) if t}
        text = json.dumps(
            {"counted_at": now, "regions": [[name or "", t, p] for name, (t, p) in by_region.items()]}
        )
        await self.redis.set(self.prefix + "waiting", text, ex=KEEP_S)
        return Waiting(now, by_region)


def pool_regions(pool: Pool, values: Sequence[bytes]) -> tuple[list[str | None], Any]:
    """Each waiting ticket's region, as the names and each row's index among them: where its
    latency is lowest, else its `region` attribute (a string), else None. Attributes are
    parsed once per attribute group."""
    if len(pool) and bool((pool.group == pool.group[0]).all()):  # one attribute set, as most queues
        groups, first, inverse = (
            pool.group[:1],
            np.zeros(1, dtype=np.int64),
            np.zeros(len(pool), dtype=np.int64),
        )
    else:
        groups, first, inverse = np.unique(pool.group, return_index=True, return_inverse=True)
    sizes = pool.size.tolist()
    names: list[str | None] = []
    index: dict[str | None, int] = {}
    by_group = np.empty(len(groups), dtype=np.int64)
    for number, row in enumerate(first.tolist()):
        name = _attribute_region(record.tail(values[row], sizes[row])[0])
        by_group[number] = index.setdefault(name, len(index))
    names = list(index)
    codes = by_group[inverse] if len(pool) else np.zeros(0, dtype=np.int64)
    latencies = pool.latencies
    if latencies is not None:
        offset = len(names)
        names += list(latencies.regions)
        located = latencies.located
        codes[located] = offset + latencies.ms[located].argmin(axis=1)
    return names, codes


def ticket_region(value: bytes) -> str | None:
    """One waiting ticket's region, as pool_regions says, from its pool value."""
    size = int(record.field_of(value, HeaderField.PLAYERS))
    count = int(record.field_of(value, HeaderField.REGIONS))
    if count:
        start, end = record.latency_span(value, size, count)
        ms = np.frombuffer(value[start:end], dtype="<f8")
        names = record.tail(value, size)[1].split(b"\t")
        return names[int(ms.argmin())].decode()
    return _attribute_region(record.tail(value, size)[0])


def _attribute_region(attributes: bytes) -> str | None:
    if b'"region"' not in attributes:
        return None
    region = json.loads(attributes).get("region")
    return region if isinstance(region, str) else None


def _waiting(text: Any) -> Waiting:
    found = json.loads(text)
    return Waiting(
        found["counted_at"],
        {(None if name == "" else name): (t, p) for name, t, p in found["regions"]},
    )


def _windows(merged: Any) -> list[Window]:
    found = []
    for minutes, flat in zip(WINDOWS_MIN, merged, strict=True):
        counts = _pairs(flat)
        found.append(
            Window(
                minutes,
                counts.get("m", 0),
                counts.get("t", 0),
                {int(f[1:]): c for f, c in counts.items() if f[0] == "w"},
                {int(f[1:]): c for f, c in counts.items() if f[0] == "q"},
            )
        )
    return found


def _counts(text: Any) -> dict[int, int]:
    """A class's counts as refresh_estimates keeps them: "<value>:<count>" pairs."""
    pairs = (pair.partition(":") for pair in reply_text(text).split())
    return {int(value): int(count) for value, _, count in pairs}


def _pairs(flat: Any) -> dict[str, int]:
    return {
        (flat[i].decode() if isinstance(flat[i], bytes) else str(flat[i])): int(flat[i + 1])
        for i in range(0, len(flat), 2)
    }
