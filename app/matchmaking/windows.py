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

from app.matchmaking.balance import Units, snake_quality, split_units
from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Match
from app.matchmaking.quality import log_thresholds
from app.matchmaking.scoring import Scores, best_splits
from app.matchmaking.seating import UnitRoles
from app.rating import RatingInputError

# Tickets a call tries to anchor a smaller match on (smaller_matches).
ANCHORS = 64


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
        used = {row for match in found for row in match.rows}
        left = np.array([row for row in rows.tolist() if row not in used], dtype=np.int64)
        found += smaller_matches(forming, left, region)
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
        mended = _mend(forming, rows, [w.copy() for w in windows], region)
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


def _mend(
    forming: Forming, rows: IntArray, windows: list[IntArray], region: RegionLimit | None
) -> list[IntArray]:
    """The tiled windows (positions in `rows`), each holding two tickets that avoid each other
    mended by exchanging one of them with a ticket of a window next to it, or one no window
    took, close in skill: the exchange of best total quality that leaves both sides clear of
    clashes and above their thresholds. A window that no exchange mends is given up."""
    pool, shape = forming.pool, forming.shape
    needed = shape.teams * shape.team_size
    owner = np.full(len(rows), -1, dtype=np.int64)
    for number, window in enumerate(windows):
        owner[window] = number
    kept = [True] * len(windows)

    def clashes_in(positions: IntArray) -> int:
        members = rows[positions]
        a, b = np.triu_indices(len(members), 1)
        return int(forming.clashes.between(members[a], members[b]).sum())

    def score(positions: IntArray) -> float:
        members = rows[np.sort(positions)]
        longest = float(pool.waited[members].max())
        if region is not None and region[0][members].max() > region[1].limit(longest):
            return -np.inf
        got = best_splits(
            pool.mu[members][None, :], pool.var[members][None, :], shape.teams, shape.team_size, forming.beta2
        )
        value = float(got.log_quality[0])
        if got.exact and value < float(log_thresholds(forming.relax, np.array([longest]))[0]):
            return -np.inf
        return math.exp(value)

    for number in range(len(windows)):
        # Each exchange takes one clash out (a window may hold a chain of them).
        for _ in range(needed):
            window = windows[number]
            count = clashes_in(window)
            if not count:
                break
            best: tuple[float, int, int] | None = None
            low, high = max(0, int(window.min()) - needed), min(len(rows), int(window.max()) + needed + 1)
            members = rows[window]
            a, b = np.triu_indices(len(members), 1)
            hit = forming.clashes.between(members[a], members[b])
            # Only moving a ticket of a clash takes a clash out.
            for x in sorted(set(window[a[hit]].tolist()) | set(window[b[hit]].tolist())):
                for y in range(low, high):
                    other = int(owner[y])
                    if other == number or (other >= 0 and not kept[other]):
                        continue
                    mine = np.where(window == x, y, window)
                    if clashes_in(mine) >= count:
                        continue
                    theirs = None if other < 0 else np.where(windows[other] == y, x, windows[other])
                    if theirs is not None and clashes_in(theirs):
                        continue
                    total = score(mine) + (0.0 if theirs is None else score(theirs))
                    if np.isfinite(total) and (best is None or total > best[0]):
                        best = (total, x, y)
            if best is None:
                break
            _, x, y = best
            other = int(owner[y])
            windows[number] = np.where(window == x, y, window)
            owner[y], owner[x] = number, other
            if other >= 0:
                windows[other] = np.where(windows[other] == y, x, windows[other])
        if clashes_in(windows[number]):
            kept[number] = False
            owner[windows[number]] = -1
    return [np.sort(window) for window, keep in zip(windows, kept, strict=True) if keep]


def _gather(forming: Forming, rows: IntArray, start: int, needed: int, teams: int, within: int) -> list[int]:
    """Positions from `start` on (at most `within` further) whose tickets fill `needed` players,
    each admitted in turn (a ticket that would overflow, that the composition cannot seat
    beside those taken, or that clashes with one of them, is skipped); empty when they do not
    fill it."""
    pool = forming.pool
    composition = forming.shape.composition
    masks = forming.player_masks
    seated = [0] * composition.subsets if composition is not None else []
    window: list[int] = []
    members: list[int] = []
    count = 0
    for k in range(start, min(len(rows), start + within)):
        row = int(rows[k])
        size = int(pool.size[row])
        if count + size > needed:
            continue  # a ticket that does not fit: look further along for others
        if forming.clashes and members and forming.clashes.within([*members, row]):
            continue
        if composition is not None and masks is not None and not composition.admit(seated, masks[row], teams):
            continue
        window.append(k)
        members.append(row)
        count += size
        if count == needed:
            return window
    return []


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
        window = _gather(forming, rows, start, needed, teams, 4 * needed)
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


def smaller_matches(forming: Forming, rows: IntArray, region: RegionLimit | None) -> list[Match]:
    """Matches below full size among `rows` (sorted by skill), each anchored on a ticket whose
    wait accepts it, longest wait first."""
    pool, shape = forming.pool, forming.shape
    if len(rows) < shape.minimum:
        return []
    accepted = shape.accepted(pool.waited[rows], forming.relax.seconds)
    anchors = [int(k) for k in np.argsort(-pool.waited[rows], kind="stable") if accepted[k] < shape.players]
    free = np.ones(len(rows), dtype=np.bool_)
    found: list[Match] = []
    # Each anchor walks and balances windows around it: a call tries the longest waits first,
    # and at most ANCHORS of them; the rest are tried by the next call.
    for anchor in anchors[:ANCHORS]:
        if len(found) >= forming.max_matches:
            break
        if not free[anchor]:
            continue
        open_positions = np.flatnonzero(free)
        players = int(pool.size[rows[open_positions]].sum())
        for teams, team_size in shape.smaller(min(players, shape.players - 1), int(accepted[anchor]))[:2]:
            match = _anchored(forming, rows, open_positions, anchor, teams, team_size, region)
            if match is not None:
                taken = {row for row in match.rows}
                free[[k for k in open_positions.tolist() if int(rows[k]) in taken]] = False
                found.append(match)
                break
    return found


def _anchored(
    forming: Forming,
    rows: IntArray,
    open_positions: IntArray,
    anchor: int,
    teams: int,
    team_size: int,
    region: RegionLimit | None,
) -> Match | None:
    """The best match of `teams` × `team_size` among the open positions that holds the anchor."""
    pool = forming.pool
    needed = teams * team_size
    at = int(np.searchsorted(open_positions, anchor))
    candidates: list[list[int]] = []
    for first in range(max(0, at - needed + 1), at + 1):
        window = _gather(forming, rows[open_positions], first, needed, teams, 4 * needed)
        if window and at in window:
            candidates.append([int(rows[open_positions[k]]) for k in window])
    best: Match | None = None
    for members in candidates:
        member_rows = np.array(members, dtype=np.int64)
        if region is not None:
            ms, rule = region
            if ms[member_rows].max() > rule.limit(float(pool.waited[member_rows].max())):
                continue
        match = balanced_match(forming, member_rows, teams)
        if match is not None and (best is None or match.quality > best.quality):
            best = match
    return best


def balanced_match(forming: Forming, window: IntArray, teams: int) -> Match | None:
    """The window's tickets split into their best teams (balance.split_units), if the split
    clears the threshold of its longest wait."""
    pool = forming.pool
    units = Units(
        pool.mu[window].tolist(),
        (pool.var[window] + pool.size[window] * forming.beta2).tolist(),
        pool.size[window].tolist(),
    )
    seating = None
    composition = forming.shape.composition
    if composition is not None and forming.player_masks is not None and forming.preferences is not None:
        members = window.tolist()
        seating = UnitRoles(
            composition, [forming.player_masks[r] for r in members], [forming.preferences[r] for r in members]
        )
    try:
        split = split_units(units, teams, forming.beta2, roles=seating)
    except RatingInputError:
        return None
    longest = float(pool.waited[window].max())
    if split.quality < forming.relax.threshold(longest):
        return None
    match = Match(tuple(tuple(int(window[u]) for u in team) for team in split.teams), split.quality, longest)
    if split.roles is None:
        return match
    return Match(match.teams, match.quality, longest, roles=forming.roles_of(match, split.roles))
