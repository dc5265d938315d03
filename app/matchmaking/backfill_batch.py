"""The batched backfill search: many backfills of one open pattern filled in one array search.

On a large pool a backfill's fill search is small (a few candidates per team) and its cost is
the per-call overhead of NumPy on tiny arrays, paid once per backfill. Here the backfills of a
chunk that leave the same slots open share one search: each team's candidates are its own
(disjoint from its other teams' and from the chunk's other backfills', so no two fills can
want one ticket), every set of a team's candidates that fits its open slots exactly is
enumerated (parties whole), every combination of one set per team is scored at once by the
completed match's draw quality (seed 000 eq. 7, quality.team_log_quality), and each backfill
takes its best combination: on its candidates the search is exhaustive.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from app.matchmaking.pool import FloatArray, IntArray
from app.matchmaking.quality import team_log_quality

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


def combinations(open_slots: IntArray, spare: int) -> int:
    """How many combinations the batched search scores per backfill of this open pattern."""
    return math.prod(len(subsets(int(o) + spare, int(o))) for o in open_slots if o > 0)


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
    fills: list[tuple[tuple[int, ...], ...] | None] = []
    for backfill in range(m):
        if best_scores[backfill] == -np.inf:
            fills.append(None)
            continue
        chosen: list[tuple[int, ...]] = [() for _ in range(teams)]
        for team, rows, sets, pick in zip(open_teams, candidates, team_sets, picks, strict=True):
            members = sets[int(pick[backfill])]
            chosen[team] = tuple(int(row) for row in rows[backfill, members[members >= 0]])
        fills.append(tuple(chosen))
    return fills, best_scores
