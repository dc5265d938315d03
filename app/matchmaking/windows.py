"""Matches of teams × team_size: windows of skill neighbours, each split into its best teams.

Within a group sorted by skill, a candidate match is a window of consecutive tickets that
fills the shape exactly.

- When every ticket of the group is one player, the windows are the runs of `teams ×
  team_size` consecutive players, and all of them are scored at once: each distinct split of
  a window into teams (SPLIT_LIMIT at most; 126 for 5v5, 1 for a free-for-all) gets its
  quality from team sums, so every window carries its exact best split. Windows are then
  taken greedily by that quality without overlap. Shapes with more splits rank windows by a
  snake draft instead and balance the chosen ones (balance.split_units).
- Groups with parties walk the windows one by one (a party that would overflow is skipped),
  rank them by a snake draft of the tickets, and balance the best `4 × max_matches` exactly.

Under a latency rule the windows are walked once per region (proposals.py), among the
tickets that could ever play there, and a window counts only if its worst latency in that
region is within the limit of its longest wait.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from app.matchmaking.balance import Units, snake_quality, split_units
from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import FloatArray, IntArray, Match, Pool
from app.matchmaking.quality import Relaxation, team_quality
from app.rating import RatingInputError

SPLIT_LIMIT = 512
# Windows scored per NumPy pass: bounds the (windows × splits × teams) arrays.
CHUNK = 2048


def split_count(teams: int, team_size: int) -> int:
    """Splits of teams × team_size players into teams of team_size, up to relabelling teams."""
    players = teams * team_size
    return int(math.factorial(players) // (math.factorial(team_size) ** teams * math.factorial(teams)))


@cache
def split_patterns(teams: int, team_size: int) -> IntArray | None:
    """Every split as a row of team labels by position, or None above SPLIT_LIMIT splits.

    A position may open team t only if teams 0..t−1 are already open, so each split is
    listed once, not once per relabelling."""
    if split_count(teams, team_size) > SPLIT_LIMIT:
        return None
    players = teams * team_size
    labels = [0] * players
    filled = [0] * teams
    found: list[list[int]] = []

    def place(position: int, opened: int) -> None:
        if position == players:
            found.append(list(labels))
            return
        for team in range(min(opened + 1, teams)):
            if filled[team] < team_size:
                labels[position] = team
                filled[team] += 1
                place(position + 1, max(opened, team + 1))
                filled[team] -= 1

    place(0, 0)
    return np.array(found, dtype=np.int64)


def snake_pattern(teams: int, team_size: int) -> IntArray:
    """Team labels by position (ascending skill) of a snake draft from the strongest down."""
    players = teams * team_size
    labels = np.empty(players, dtype=np.int64)
    for index in range(players):
        lap, seat = divmod(index, teams)
        labels[players - 1 - index] = seat if lap % 2 == 0 else teams - 1 - seat
    return labels


# One region's latency column of the pool (ms per row) and the rule it must keep.
RegionLimit = tuple[FloatArray, LatencyRule]


def window_matches(
    pool: Pool,
    rows: IntArray,
    teams: int,
    team_size: int,
    beta2: float,
    relax: Relaxation,
    max_matches: int,
    region: RegionLimit | None = None,
) -> list[Match]:
    """Up to max_matches matches among `rows`: one group's tickets, sorted by skill; with a
    region, only windows within its latency limit."""
    if bool((pool.size[rows] == 1).all()):
        return _solo_windows(pool, rows, teams, team_size, beta2, relax, max_matches, region)
    return _party_windows(pool, rows, teams, team_size, beta2, relax, max_matches, region)


def _solo_windows(
    pool: Pool,
    rows: IntArray,
    teams: int,
    team_size: int,
    beta2: float,
    relax: Relaxation,
    max_matches: int,
    region: RegionLimit | None,
) -> list[Match]:
    needed = teams * team_size
    if len(rows) < needed:
        return []
    mus = sliding_window_view(pool.mu[rows], needed)
    variances = sliding_window_view(pool.var[rows], needed)
    longest = sliding_window_view(pool.waited[rows], needed).max(axis=1)
    patterns = split_patterns(teams, team_size)
    exact = patterns is not None
    if patterns is None:
        patterns = snake_pattern(teams, team_size)[None, :]
    quality, split = _best_splits(mus, variances, patterns, teams, team_size, beta2)
    feasible = quality >= relax.thresholds(longest) if exact else np.ones(len(quality), dtype=np.bool_)
    if region is not None:
        ms, rule = region
        feasible &= sliding_window_view(ms[rows], needed).max(axis=1) <= rule.limits(longest)
    candidates = np.nonzero(feasible)[0]
    used = bytearray(len(rows))
    found: list[Match] = []
    wanted = max_matches if exact else 4 * max_matches
    for start in candidates[np.lexsort((candidates, -quality[candidates]))].tolist():
        if len(found) >= wanted:
            break
        if used.find(1, start, start + needed) != -1:
            continue
        used[start : start + needed] = b"\x01" * needed
        window = rows[start : start + needed]
        if exact:
            labels = patterns[split[start]]
            split_rows = tuple(tuple(window[labels == team].tolist()) for team in range(teams))
            found.append(Match(split_rows, float(quality[start]), float(longest[start])))
            continue
        balanced = _balanced(pool, window, teams, beta2)
        if balanced is not None and balanced.quality >= relax.threshold(balanced.longest_wait):
            found.append(balanced)
    return found


def _best_splits(
    mus: FloatArray, variances: FloatArray, patterns: IntArray, teams: int, team_size: int, beta2: float
) -> tuple[FloatArray, IntArray]:
    """Per window (a row of players, ascending skill): the best quality over the split
    patterns, and which pattern gives it."""
    indicators = [(patterns == team).T.astype(np.float64) for team in range(teams)]
    players = np.full(teams, float(team_size))
    count = len(mus)
    if teams == 2:
        # Two teams: eq. 7 is sqrt(n·β²/D)·exp(−Δ²/2D) with D the same for every split of a
        # window (all its players' sigma² + n·β²), so the best split is the smallest |Δ|.
        total = mus.sum(axis=1)
        spread = variances.sum(axis=1) + teams * team_size * beta2
        gap = np.abs(2.0 * (mus @ indicators[0]) - total[:, None])
        best = gap.argmin(axis=1)
        delta = np.take_along_axis(gap, best[:, None], axis=1)[:, 0]
        noise = teams * team_size * beta2
        two_team: FloatArray = np.sqrt(noise / spread) * np.exp(-delta * delta / (2.0 * spread))
        return two_team, best
    best_quality = np.empty(count)
    best_split = np.empty(count, dtype=np.int64)
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        team_mu = np.stack([mus[start:stop] @ ind for ind in indicators], axis=-1)
        team_spread = np.stack([variances[start:stop] @ ind for ind in indicators], axis=-1)
        quality = team_quality(team_mu, team_spread + team_size * beta2, players, beta2)
        best_split[start:stop] = quality.argmax(axis=1)
        best_quality[start:stop] = np.take_along_axis(quality, best_split[start:stop, None], axis=1)[:, 0]
    return best_quality, best_split


def _party_windows(
    pool: Pool,
    rows: IntArray,
    teams: int,
    team_size: int,
    beta2: float,
    relax: Relaxation,
    max_matches: int,
    region: RegionLimit | None,
) -> list[Match]:
    needed = teams * team_size
    size = pool.size[rows].tolist()
    mu = pool.mu[rows].tolist()
    spread = (pool.var[rows] + pool.size[rows] * beta2).tolist()
    ranked: list[tuple[float, list[int]]] = []
    for start in range(len(rows)):
        window: list[int] = []
        count = 0
        for k in range(start, min(len(rows), start + 4 * needed)):
            if count + size[k] > needed:
                continue  # a party that overflows: look further along for smaller tickets
            window.append(k)
            count += size[k]
            if count == needed:
                break
        if count == needed and region is not None:
            ms, rule = region
            members = rows[window]
            if ms[members].max() > rule.limit(float(pool.waited[members].max())):
                continue
        if count == needed:
            units = Units([mu[k] for k in window], [spread[k] for k in window], [size[k] for k in window])
            score = snake_quality(units, teams, beta2)
            if score is not None:
                ranked.append((score, window))
    ranked.sort(key=lambda r: -r[0])
    used: set[int] = set()
    found: list[Match] = []
    for _, window in ranked:
        if len(found) >= 4 * max_matches:
            break
        if used.isdisjoint(window):
            used.update(window)
            balanced = _balanced(pool, rows[window], teams, beta2)
            if balanced is not None and balanced.quality >= relax.threshold(balanced.longest_wait):
                found.append(balanced)
    return found


def _balanced(pool: Pool, window: IntArray, teams: int, beta2: float) -> Match | None:
    """The window's tickets split into their best teams (balance.split_units)."""
    units = Units(
        pool.mu[window].tolist(),
        (pool.var[window] + pool.size[window] * beta2).tolist(),
        pool.size[window].tolist(),
    )
    try:
        split = split_units(units, teams, beta2)
    except RatingInputError:
        return None
    return Match(
        tuple(tuple(int(window[u]) for u in team) for team in split.teams),
        split.quality,
        float(pool.waited[window].max()),
    )
