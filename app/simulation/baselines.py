"""The two baselines the loop is measured against (pure).

- **Elo** (seed 000 §1 eq. 1 and §4.1): the Gaussian Elo of the Halo 2 comparison, rated on
  the loop's own matches. A player performs N(s, β²), so P(1 beats 2) = Φ((s1 − s2)/(√2·β)),
  and each result moves both ratings by Δ = K·(y − P), y = 1, ½ or 0. Seed 000 used α = 0.07,
  "a K factor of 24 on the Elo scale", whose class width β is 200 points: here K = 24·β/200
  in the mode's own units (0.5 for β = 25/6), every player starting at the mode's mu. A team
  plays at its players' mean rating (team-average Elo), every member moving by the team's Δ;
  with more than two teams each team's Δ is the mean of its duels with the others (seed 000's
  "duelling" heuristic).
- **Random pairing**: the same queue, but tickets are matched in random order as soon as a
  match's worth wait, ignoring skill, quality, latency, roles and avoid lists: what the loop
  would learn if matchmaking chose no informative matches (seed 003 §4.2 calls matchmaking by
  quality sequential experimental design). A mode whose matches may shrink gets smaller
  matches by the same rule as the service's (shape.py: the size the longest wait accepts), so
  both loops' matches hold about as many players.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.matchmaking.pool import Match, Pool
from app.matchmaking.quality import team_quality
from app.matchmaking.shape import MatchShape
from app.rating.truncation import erfc_array

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ELO_K = 24.0
ELO_CLASS_WIDTH = 200.0


def elo_k(beta: float) -> float:
    """Seed 000's K = 24 on the Elo scale (β = 200), in units where performance noise is β."""
    return ELO_K * beta / ELO_CLASS_WIDTH


def normal_cdf(x: FloatArray) -> FloatArray:
    result: FloatArray = 0.5 * erfc_array(-x / math.sqrt(2.0))
    return result


def elo_deltas(ratings: FloatArray, ranks: FloatArray, beta: float) -> FloatArray:
    """Per match (rows) and team (columns): the Δ each of the team's players moves by, from the
    players' ratings (matches × teams × team size) and the teams' ranks (1 is first)."""
    team = ratings.mean(axis=2)
    gap = team[:, :, None] - team[:, None, :]
    expected = normal_cdf(gap.ravel() / (math.sqrt(2.0) * beta)).reshape(gap.shape)
    actual = np.where(ranks[:, :, None] < ranks[:, None, :], 1.0, 0.0)
    actual = np.where(ranks[:, :, None] == ranks[:, None, :], 0.5, actual)
    teams = ratings.shape[1]
    off_diagonal = 1.0 - np.eye(teams)
    # Each team's mean over its duels (one duel when there are two teams).
    deltas: FloatArray = elo_k(beta) * ((actual - expected) * off_diagonal).sum(axis=2) / (teams - 1)
    return deltas


def random_matches(
    pool: Pool,
    teams: int,
    team_size: int,
    beta: float,
    rng: np.random.Generator,
    max_matches: int,
    shrinking: tuple[MatchShape, float] | None = None,
) -> list[Match]:
    """Matches of teams × team_size from the pool's tickets taken in random order, each placed
    in the first team with room for it (a party that fits nowhere waits for the next call);
    only tickets of one group share a match. With `shrinking` (a shape that may shrink, and its
    relax_seconds), the tickets left of each group then make one smaller match, the largest
    their players fill down to the size their longest wait accepts. Quality is seed 000 eq. 7,
    for the report."""
    found: list[list[list[int]]] = []
    smaller: list[list[list[int]]] = []
    rows = np.flatnonzero(pool.size <= team_size)
    sizes = pool.size.tolist()
    for group in np.unique(pool.group[rows]).tolist():
        members = rows[pool.group[rows] == group]
        queue = members[rng.permutation(len(members))].tolist()
        position = 0
        carried: list[int] = []  # parties that fitted no team of an earlier match
        while len(found) < max_matches:
            filled = [0] * teams
            placed: list[list[int]] = [[] for _ in range(teams)]
            skipped: list[int] = []
            for row in carried:
                if sum(filled) == teams * team_size or not _place(row, sizes[row], filled, placed, team_size):
                    skipped.append(row)
            while sum(filled) < teams * team_size and position < len(queue):
                row = queue[position]
                position += 1
                if not _place(row, sizes[row], filled, placed, team_size):
                    skipped.append(row)
            carried = skipped
            if sum(filled) < teams * team_size:
                # The tickets of this unfilled match, and those it skipped, wait on.
                carried = [row for team in placed for row in team] + skipped
                break
            found.append(placed)
        if shrinking is not None and len(found) + len(smaller) < max_matches:
            match = _smaller(pool, [*carried, *queue[position:]], *shrinking)
            if match is not None:
                smaller.append(match)
    return _scored(pool, found, beta) + _scored(pool, smaller, beta)


def _smaller(pool: Pool, left: list[int], shape: MatchShape, seconds: float) -> list[list[int]] | None:
    """The left tickets (in their random order) in one smaller match, if their longest wait
    accepts one their players can fill: the first team with room takes each ticket."""
    if not left:
        return None
    sizes = pool.size.tolist()
    players = sum(sizes[row] for row in left)
    least = int(shape.accepted(np.array([float(pool.waited[left].max())]), seconds)[0])
    for teams, team_size in shape.smaller(min(players, shape.players - 1), least):
        filled = [0] * teams
        placed: list[list[int]] = [[] for _ in range(teams)]
        for row in left:
            if sum(filled) == teams * team_size:
                break
            _place(row, sizes[row], filled, placed, team_size)
        if sum(filled) == teams * team_size:
            return placed
    return None


def _place(row: int, size: int, filled: list[int], placed: list[list[int]], team_size: int) -> bool:
    """Put the ticket in the first team with room for it; False when none has."""
    for team, count in enumerate(filled):
        if count + size <= team_size:
            filled[team] += size
            placed[team].append(row)
            return True
    return False


def _scored(pool: Pool, found: list[list[list[int]]], beta: float) -> list[Match]:
    """The matches (teams of pool rows) with their quality, all scored at once."""
    if not found:
        return []
    if len({len(placed) for placed in found}) > 1:
        return [match for placed in found for match in _scored(pool, [placed], beta)]
    beta2 = beta * beta
    teams = len(found[0])
    width = max(len(team) for placed in found for team in placed)
    # Rows per (match, team), padded with a row of zeros at the end of the pool's columns.
    padded = np.full((len(found), teams, width), len(pool), dtype=np.int64)
    for number, placed in enumerate(found):
        for team, members in enumerate(placed):
            padded[number, team, : len(members)] = members
    mu = np.append(pool.mu, 0.0)[padded].sum(axis=2)
    var = np.append(pool.var, 0.0)[padded].sum(axis=2)
    players = np.append(pool.size, 0)[padded].sum(axis=2).astype(np.float64)
    quality = team_quality(mu, var + players * beta2, players[0], beta2)
    longest = np.append(pool.waited, -np.inf)[padded].max(axis=(1, 2))
    return [
        Match(tuple(tuple(team) for team in placed), q, wait)
        for placed, q, wait in zip(found, quality.tolist(), longest.tolist(), strict=True)
    ]
