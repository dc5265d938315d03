"""The batched backfill search: many backfills of one open pattern filled in one array search.

On a large pool a backfill's fill search is small (a few candidates per team) and its cost is
the per-call overhead of NumPy on tiny arrays, paid once per backfill. Here the backfills of a
chunk that leave the same slots open share one search: each team's candidates are its own
(disjoint from its other teams' and from the chunk's other backfills', so no two fills can
want one ticket), every set of a team's candidates that fits its open slots exactly is
enumerated (parties whole), every combination of one set per team is scored at once by the
completed match's draw quality (seed 000 eq. 7, quality.team_log_quality), and each backfill
takes its best combination: on its candidates the search is exhaustive.

Backfills join a chunk in age order (reserve: each takes its candidates out of the free rows,
so an earlier backfill has the first pick); fill_chunk searches the chunk, keeps the fills that
clear their thresholds and frees the reserved rows no fill took. backfill.fill_backfills
decides which backfills take this search (batched) and searches the others one at a time.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

from app.matchmaking.opening import Fill, FreeRows, Opening, slot_targets, team_promise
from app.matchmaking.pool import FloatArray, IntArray, Pool
from app.matchmaking.quality import Relaxation, team_log_quality

# A group's free tickets per open slot of a backfill from which it takes the batched search.
WIDE = 40
# Candidates per team in the batched search beyond the team's open slots.
SPARE = 4
# Free rows on each side of a team's target skill among which the batched search's candidates
# are the most promising.
WINDOW = 32
# Backfills per chunk of the batched search: the tickets they reserve (and mostly leave)
# keep later backfills of the chunk from the nearest ones until it ends.
CHUNK = 64

# The most combinations of one set per team a backfill's batched search scores; a pattern
# with more (many teams with open slots) is searched one backfill at a time.
COMBINATIONS = 4_000

_SUBSETS: dict[tuple[int, int], IntArray] = {}


def subsets(k: int, most: int) -> IntArray:
    """Every subset of range(k) of 1 to `most` elements, a row each, padded with -1 (cached:
    a few shapes recur for every chunk)."""
    found = _SUBSETS.get((k, most))
    if found is None:
        rows = [
            list(chosen) + [-1] * (most - size)
            for size in range(1, min(k, most) + 1)
            for chosen in itertools.combinations(range(k), size)
        ]
        found = _SUBSETS[(k, most)] = np.array(rows, dtype=np.int64).reshape(-1, most)
    return found


@functools.cache
def combinations(open_slots: tuple[int, ...], spare: int) -> int:
    """How many combinations the batched search scores per backfill of this open pattern
    (cached: asked for every backfill, of a few patterns)."""
    return math.prod(len(subsets(o + spare, o)) for o in open_slots if o > 0)


def best_fills(
    roster_mu: FloatArray,
    roster_var: FloatArray,
    roster_players: IntArray,
    open_slots: IntArray,
    candidates: list[IntArray],
    size: IntArray,
    mu: FloatArray,
    var: FloatArray,
    beta2: float,
) -> tuple[list[tuple[tuple[int, ...], ...] | None], FloatArray]:
    """Per backfill (rows of roster_mu, roster_var, roster_players: (m, teams) sums of its
    roster), its best fill from its candidates, and that completed match's log quality.

    `open_slots` (teams,) is the pattern every backfill shares; `candidates` holds, per team
    with open slots, an (m, k) array of pool rows (that team's own candidates, k = its open
    slots plus the same spare for every team); `size`, `mu`, `var` are the pool's columns.
    A fill is per team the pool rows joining it; None (log quality -inf) when no set of a
    team's candidates fits its slots exactly."""
    m, teams = roster_mu.shape
    open_teams = [t for t in range(teams) if open_slots[t] > 0]
    add_mu = np.zeros((m, 1, teams))
    add_var = np.zeros((m, 1, teams))
    fits = np.ones((m, 1), dtype=np.bool_)
    team_sets: list[IntArray] = []
    for team, rows in zip(open_teams, candidates, strict=True):
        sets = subsets(rows.shape[1], int(open_slots[team]))  # (s, open)
        present = sets >= 0
        members = rows[:, np.where(present, sets, 0)]  # (m, s, open) pool rows
        set_size = np.where(present, size[members], 0).sum(axis=2)
        set_mu = np.where(present, mu[members], 0.0).sum(axis=2)
        set_var = np.where(present, var[members], 0.0).sum(axis=2)
        # Combinations so far (m, c) times this team's sets (m, s), flattened to (m, c·s).
        combined = add_mu.shape[1] * len(sets)
        add_mu = np.repeat(add_mu, len(sets), axis=1)
        add_var = np.repeat(add_var, len(sets), axis=1)
        add_mu[:, :, team] += np.tile(set_mu, (1, combined // len(sets)))
        add_var[:, :, team] += np.tile(set_var, (1, combined // len(sets)))
        fits = np.repeat(fits, len(sets), axis=1) & np.tile(
            set_size == open_slots[team], (1, combined // len(sets))
        )
        team_sets.append(sets)
    players = (roster_players + open_slots).astype(np.float64)[:, None, :]
    spread = roster_var[:, None, :] + add_var + beta2 * players
    scores = team_log_quality(roster_mu[:, None, :] + add_mu, spread, players, beta2)
    scores = np.where(fits, scores, -np.inf)
    best = scores.argmax(axis=1)
    best_scores = scores[np.arange(m), best]
    shape = [len(sets) for sets in team_sets]
    picks = np.unravel_index(best, shape) if shape else ()
    # Per team, each backfill's chosen pool rows (-1 padding), as lists: one NumPy pass per
    # team rather than per backfill.
    joining: list[list[list[int]] | None] = [None] * teams
    for team, rows, sets, pick in zip(open_teams, candidates, team_sets, picks, strict=True):
        members = sets[pick]  # (m, open) positions among the backfill's candidates
        at = rows[np.arange(m)[:, None], np.maximum(members, 0)]
        joining[team] = np.where(members >= 0, at, -1).tolist()
    fills: list[tuple[tuple[int, ...], ...] | None] = []
    for backfill, score in enumerate(best_scores.tolist()):
        if score == -np.inf:
            fills.append(None)
            continue
        fills.append(
            tuple(
                () if chosen is None else tuple(row for row in chosen[backfill] if row >= 0)
                for chosen in joining
            )
        )
    return fills, best_scores


def batched(pool: Pool, free: FreeRows, opening: Opening) -> bool:
    """Whether the opening takes the batched search: many free tickets in its group, no
    latencies to check for it, no avoid lists among the pool's tickets and few combinations."""
    if pool.clashes is not None and len(pool.clashes):
        return False
    if pool.latencies is not None and opening.region is not None:
        return False
    if combinations(tuple(opening.open.tolist()), SPARE) > COMBINATIONS:
        return False
    return free.available(opening.group) >= WIDE * int(opening.open.sum())


def reserve(pool: Pool, free: FreeRows, opening: Opening, beta2: float) -> list[IntArray] | None:
    """Per team with open slots, its open slots plus SPARE free rows that fit its slots (the
    nearest its target skill and the most promising, team_promise, of the WINDOW rows not held
    each side of it), held in the free rows until the chunk ends (None, nothing held, when a
    team's neighbourhood holds too few that fit)."""
    rows, skill = free.of(opening.group)
    targets = slot_targets(opening, skill)
    teams = np.flatnonzero(opening.open > 0)
    starts = skill.searchsorted(targets[teams]).tolist()
    reserved: list[IntArray] = []
    held: list[IntArray] = []  # positions in `rows`, per team
    for team, at in zip(teams.tolist(), starts, strict=True):
        slots = int(opening.open[team])
        k = slots + SPARE
        window = free.around(opening.group, at, WINDOW)
        near_rows = rows[window]
        size = pool.size[near_rows]
        fits = size <= slots
        if not fits.all():
            window, near_rows, size = window[fits], near_rows[fits], size[fits]
        if len(window) < k:
            for positions in held:
                free.release(opening.group, positions)
            return None
        promise = team_promise(opening, team, targets, size, pool.mu[near_rows], pool.var[near_rows], beta2)
        # The nearest by skill, then the most promising: where the pool is sparse (a target
        # at its edge) the best fill can pair a near ticket of large sigma with another.
        nearest = np.abs(skill[window] - targets[team]).argsort(kind="stable")[:slots]
        promise[nearest] = np.inf
        near = window[(-promise).argsort(kind="stable")[:k]]
        # Held at once: the backfill's next team takes its window from the rows left.
        free.hold(opening.group, near)
        held.append(near)
        reserved.append(rows[near])
    return reserved


def fill_chunk(
    pool: Pool,
    free: FreeRows,
    openings: Sequence[Opening],
    chunk: list[tuple[int, list[IntArray]]],
    beta2: float,
    relax: Relaxation,
    fills: list[Fill | None],
) -> list[int]:
    """Fill the chunk's openings from their reserved candidates (into `fills`), then free
    every reserved row no fill took. The openings (indices) whose candidates held no fill,
    left to the search of one backfill at a time."""
    if not chunk:
        return []
    by_pattern: dict[tuple[int, ...], list[tuple[int, list[IntArray]]]] = {}
    for index, reserved in chunk:
        by_pattern.setdefault(tuple(openings[index].open.tolist()), []).append((index, reserved))
    found: dict[int, tuple[tuple[tuple[int, ...], ...] | None, float]] = {}
    for pattern, members in by_pattern.items():
        alike = [openings[index] for index, _ in members]
        chosen, scores = best_fills(
            np.array([o.mu for o in alike]),
            np.array([o.var for o in alike]),
            np.array([o.players for o in alike]),
            np.array(pattern, dtype=np.int64),
            [np.array([reserved[team] for _, reserved in members]) for team in range(len(members[0][1]))],
            pool.size,
            pool.mu,
            pool.var,
            beta2,
        )
        for (index, _), teams, score in zip(members, chosen, scores.tolist(), strict=True):
            found[index] = teams, score
    late: list[int] = []
    taken: list[int] = []
    for index, _ in chunk:
        teams, score = found[index]
        if teams is None:
            late.append(index)
            continue
        quality = math.exp(score)
        if quality >= relax.threshold(openings[index].age):
            fill = fills[index] = Fill(teams, quality)
            taken.extend(fill.rows)
    # The reservations return, but for the rows the fills took.
    free.settle(taken)
    return late
