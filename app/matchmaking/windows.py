"""Matches of a team shape among one list of tickets sorted by skill: windows of neighbours.

- When every ticket of the list is one player, the candidates are the runs of `teams ×
  team_size` consecutive players, all scored at once: each distinct split of a window into
  teams (SPLIT_LIMIT at most; 126 for 5v5, 1 for a free-for-all) gets its quality from team
  sums, so every window carries its exact best split. Shapes with more splits rank windows by
  a snake draft and balance the chosen ones (balance.split_units). The windows are then
  tiled (`tile`): of the windows that clear their threshold, the most that do not overlap,
  and among those the best total quality. Taking the best windows greedily instead leaves
  gaps shorter than a window between them, and their tickets wait for no reason.
- Lists with parties walk the windows one by one, admitting a ticket only if it fits (a party
  that would overflow, or that the composition or an avoid list refuses, is skipped), rank
  them by a snake draft of the tickets, and balance the best `4 × max_matches` exactly.
- A mode whose matches may shrink (shape.py) then forms smaller matches from the tickets left:
  each ticket whose wait accepts a smaller match, longest wait first, anchors the largest
  match the tickets left near it in skill allow, down to the size its wait accepts.

Every candidate is checked against avoid lists (forming.Forming.clashes) and, when its tickets
were let in by a limit another ticket's wait widened, against the latency limit of its own
longest wait (forming.RegionLimit).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from app.matchmaking.balance import Units, snake_quality
from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.gathering import balanced_match, gather
from app.matchmaking.mending import mend
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Match, unmatched
from app.matchmaking.quality import log_thresholds
from app.matchmaking.scoring import Scores, best_splits
from app.matchmaking.smaller import smaller_matches


def window_matches(forming: Forming, rows: IntArray, region: RegionLimit | None = None) -> list[Match]:
    """Matches among `rows` (one group's tickets, sorted by skill): full size first, then,
    for a shape that may shrink, smaller ones from the tickets left."""
    shape = forming.shape
    solo = bool((forming.pool.size[rows] == 1).all())
    if solo and shape.composition is None:
        found = _solo_windows(forming, rows, shape.teams, shape.team_size, region)
    else:
        found = _party_windows(forming, rows, shape.teams, shape.team_size, region)
    if shape.flexible:
        found += smaller_matches(forming, unmatched(rows, found), region)
    return found


def tile(first: IntArray, end: IntArray, weight: FloatArray, feasible: BoolArray) -> list[int]:
    """Of candidate windows spanning positions [first, end) of a list, the feasible ones to
    take: the most that do not overlap, and among as many, the largest total weight (a dynamic
    programme over the list's positions). Their numbers, in order."""
    if not len(first) or not feasible.any():
        return []
    ends = int(end.max())
    by_end: list[list[int]] = [[] for _ in range(ends + 1)]
    for number in np.flatnonzero(feasible).tolist():
        by_end[int(end[number])].append(number)
    count = [0] * (ends + 1)
    total = [0.0] * (ends + 1)
    took = [-1] * (ends + 1)
    firsts, weights = first.tolist(), weight.tolist()
    for at in range(1, ends + 1):
        best_count, best_total, take = count[at - 1], total[at - 1], -1
        for number in by_end[at]:
            start = firsts[number]
            with_count, with_total = count[start] + 1, total[start] + weights[number]
            if with_count > best_count or (with_count == best_count and with_total > best_total):
                best_count, best_total, take = with_count, with_total, number
        count[at], total[at], took[at] = best_count, best_total, take
    chosen = []
    at = ends
    while at > 0:
        if took[at] >= 0:
            chosen.append(took[at])
            at = firsts[took[at]]
        else:
            at -= 1
    return chosen[::-1]


def _solo_windows(
    forming: Forming, rows: IntArray, teams: int, team_size: int, region: RegionLimit | None
) -> list[Match]:
    pool = forming.pool
    needed = teams * team_size
    if len(rows) < needed:
        return []
    first = np.arange(len(rows) - needed + 1, dtype=np.int64)
    longest = sliding_window_view(pool.waited[rows], needed).max(axis=1)
    scores = best_splits(
        sliding_window_view(pool.mu[rows], needed),
        sliding_window_view(pool.var[rows], needed),
        teams,
        team_size,
        forming.beta2,
    )
    feasible = np.ones(len(first), dtype=np.bool_)
    if scores.exact:
        feasible &= scores.log_quality >= log_thresholds(forming.relax, longest)
    if region is not None:
        ms, rule = region
        feasible &= sliding_window_view(ms[rows], needed).max(axis=1) <= rule.limits(longest)
    if forming.max_matches * needed * 2 <= len(rows):
        # A call that takes few of the matches the list holds: the best windows, not the most.
        chosen = _best_first(
            scores.log_quality,
            feasible,
            needed,
            forming.max_matches if scores.exact else 4 * forming.max_matches,
        )
    else:
        top = scores.log_quality[feasible].max() if feasible.any() else 0.0
        chosen = tile(first, first + needed, np.exp(scores.log_quality - top), feasible)
    windows = [first[number] + np.arange(needed) for number in chosen]
    if forming.clashes:
        mended = mend(forming, rows, [w.copy() for w in windows], region)
        if [w.tolist() for w in mended] != [w.tolist() for w in windows]:
            windows, chosen = mended, []  # scored again below
    if not windows:
        return []
    members = np.array(windows, dtype=np.int64)
    if len(chosen) == len(windows):
        final = Scores(scores.log_quality[chosen], scores.split[chosen], scores.patterns, scores.exact)
    else:
        final = best_splits(pool.mu[rows][members], pool.var[rows][members], teams, team_size, forming.beta2)
    waits = pool.waited[rows][members].max(axis=1)
    if final.exact:
        found = []
        for number, window in enumerate(rows[members]):
            labels = final.patterns[final.split[number]]
            split_rows = tuple(tuple(window[labels == team].tolist()) for team in range(teams))
            found.append(Match(split_rows, math.exp(final.log_quality[number]), float(waits[number])))
        return found
    # Snake-ranked windows: balance the best of the tiling, as many as the call may take.
    found = []
    for number in np.argsort(-final.log_quality, kind="stable").tolist():
        if len(found) >= forming.max_matches:
            break
        balanced = balanced_match(forming, rows[members[number]], teams)
        if balanced is not None:
            found.append(balanced)
    return found


def _best_first(log_quality: FloatArray, feasible: BoolArray, width: int, most: int) -> list[int]:
    """Starts of the best feasible windows of `width`, taken greedily without overlap, `most` at
    most, in the list's order."""
    candidates = np.flatnonzero(feasible)
    used = bytearray(len(log_quality) + width)
    chosen: list[int] = []
    for start in candidates[np.lexsort((candidates, -log_quality[candidates]))].tolist():
        if len(chosen) >= most:
            break
        if used.find(1, start, start + width) != -1:
            continue
        used[start : start + width] = b"\x01" * width
        chosen.append(start)
    return sorted(chosen)


def _party_windows(
    forming: Forming, rows: IntArray, teams: int, team_size: int, region: RegionLimit | None
) -> list[Match]:
    pool, beta2 = forming.pool, forming.beta2
    needed = teams * team_size
    ranked: list[tuple[float, list[int]]] = []
    starts: range | list[int] = range(len(rows))
    if forming.shape.composition is not None:
        # Under roles, players on their own were matched by role runs already (role_matches.py):
        # only windows that hold a party are walked.
        parties = np.flatnonzero(pool.size[rows] > 1)
        starts = sorted({s for p in parties.tolist() for s in range(max(0, p - needed + 1), p + 1)})
    for start in starts:
        window = gather(forming, rows, start, needed, teams, 4 * needed)
        if not window:
            continue
        members = rows[window]
        if region is not None:
            ms, rule = region
            if ms[members].max() > rule.limit(float(pool.waited[members].max())):
                continue
        units = Units(
            pool.mu[members].tolist(),
            (pool.var[members] + pool.size[members] * beta2).tolist(),
            pool.size[members].tolist(),
        )
        score = snake_quality(units, teams, beta2)
        ranked.append((score if score is not None else 0.0, window))
    ranked.sort(key=lambda r: -r[0])
    used: set[int] = set()
    found: list[Match] = []
    for _, window in ranked:
        if len(found) >= 4 * forming.max_matches:
            break
        if used.isdisjoint(window):
            balanced = balanced_match(forming, rows[window], teams)
            if balanced is not None:
                used.update(window)
                found.append(balanced)
    return found
