"""Scoring many candidate matches at once: every split of each into teams, by eq. 7.

A candidate is a row of players (their mu and sigma², by position); a split is a row of team
labels by position. Quality (seed 000 eq. 7, general form) depends on a split only through
each team's sums, so a whole array of candidates is scored for every split with a few NumPy
operations (quality.team_log_quality). Shapes with more than SPLIT_LIMIT splits are scored
for one split, a snake draft by skill, and balanced afterwards (balance.py).

Scores are logarithms: a free-for-all of a hundred players has a quality far below the
smallest double, and is still ranked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from app.matchmaking.pool import FloatArray, IntArray
from app.matchmaking.quality import team_log_quality

SPLIT_LIMIT = 512
# Candidates scored per NumPy pass: bounds the (candidates × splits × teams) arrays.
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
    if team_size == 1:  # a free-for-all: one split, everyone on their own
        return np.arange(teams, dtype=np.int64)[None, :]
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


def pattern_scores(
    mus: FloatArray, variances: FloatArray, patterns: IntArray, teams: int, team_size: int, beta2: float
) -> FloatArray:
    """log quality of every candidate (row of `mus`) under every split (row of `patterns`):
    shape (candidates, splits)."""
    count = len(mus)
    if teams == 2:
        # Two teams: eq. 7 is sqrt(n·β²/D)·exp(−Δ²/2D) with D the same for every split of a
        # candidate (all its players' sigma² + n·β²), so splits differ only in Δ.
        first = (patterns == 0).T.astype(np.float64)
        total = mus.sum(axis=1)
        spread = variances.sum(axis=1) + teams * team_size * beta2
        gap = 2.0 * (mus @ first) - total[:, None]
        noise = teams * team_size * beta2
        two: FloatArray = 0.5 * np.log(noise / spread)[:, None] - gap * gap / (2.0 * spread[:, None])
        return two
    players = np.full(teams, float(team_size))
    scores = np.empty((count, len(patterns)))
    if len(patterns) == 1:
        # One split: gather each team's players by label, no products with indicators.
        order = np.argsort(patterns[0], kind="stable")
        for start in range(0, count, CHUNK):
            stop = min(start + CHUNK, count)
            team_mu = mus[start:stop][:, order].reshape(stop - start, teams, team_size).sum(-1)
            team_var = variances[start:stop][:, order].reshape(stop - start, teams, team_size).sum(-1)
            scores[start:stop, 0] = team_log_quality(team_mu, team_var + team_size * beta2, players, beta2)
        return scores
    indicators = [(patterns == team).T.astype(np.float64) for team in range(teams)]
    for start in range(0, count, CHUNK):
        stop = min(start + CHUNK, count)
        team_mu = np.stack([mus[start:stop] @ ind for ind in indicators], axis=-1)
        team_var = np.stack([variances[start:stop] @ ind for ind in indicators], axis=-1)
        scores[start:stop] = team_log_quality(team_mu, team_var + team_size * beta2, players, beta2)
    return scores


@dataclass(frozen=True, slots=True)
class Scores:
    """Per candidate: its best split's log quality and which split (a row of `patterns`).
    Not `exact`: one snake split each, a ranking to balance afterwards."""

    log_quality: FloatArray
    split: IntArray
    patterns: IntArray
    exact: bool


def best_splits(mus: FloatArray, variances: FloatArray, teams: int, team_size: int, beta2: float) -> Scores:
    """Each candidate's best split (candidates' players in ascending skill)."""
    patterns = split_patterns(teams, team_size)
    exact = patterns is not None
    if patterns is None:
        patterns = snake_pattern(teams, team_size)[None, :]
    if len(patterns) == 1:
        scores = pattern_scores(mus, variances, patterns, teams, team_size, beta2)[:, 0]
        return Scores(scores, np.zeros(len(scores), dtype=np.int64), patterns, exact)
    if teams == 2:
        # Two teams: every split of a candidate shares its D (pattern_scores), so the best is
        # the smallest |Δ|, and only it is scored.
        first = (patterns == 0).T.astype(np.float64)
        total = mus.sum(axis=1)
        best = np.abs(2.0 * (mus @ first) - total[:, None]).argmin(axis=1)
        gap = 2.0 * (mus * first.T[best]).sum(axis=1) - total
        spread = variances.sum(axis=1) + teams * team_size * beta2
        noise = teams * team_size * beta2
        log_quality: FloatArray = 0.5 * np.log(noise / spread) - gap * gap / (2.0 * spread)
        return Scores(log_quality, best.astype(np.int64), patterns, exact)
    best_score = np.empty(len(mus))
    best_split = np.empty(len(mus), dtype=np.int64)
    for start in range(0, len(mus), CHUNK):
        stop = min(start + CHUNK, len(mus))
        scores = pattern_scores(mus[start:stop], variances[start:stop], patterns, teams, team_size, beta2)
        best_split[start:stop] = scores.argmax(axis=1)
        best_score[start:stop] = np.take_along_axis(scores, best_split[start:stop, None], axis=1)[:, 0]
    return Scores(best_score, best_split, patterns, exact)
