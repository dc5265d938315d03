"""Hill climbing over swaps of equal-sized units between teams (balance.py's heuristic).

log q of seed 000 eq. 7 is, up to a term of the team sizes alone, −½(Σ log D + log S₁) −
½(Σ m²/D − (Σ m/D)²/S₁) over the teams' means m and spreads D, with S₁ = Σ 1/D (the det ratio
and scatter of app.rating.prediction): a swap changes two teams, so every candidate swap of
every pair of teams is scored at once by updating a few sums, not by scoring a split again.
Logs, because a split of a hundred teams has a quality below the smallest double.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from app.matchmaking.seating import UnitRoles

# Rounds of swaps a climb takes at most.
CLIMB_ROUNDS = 200


def climb(
    mu: Sequence[float],
    spread: Sequence[float],
    size: Sequence[int],
    assignment: list[list[int]],
    roles: UnitRoles | None = None,
) -> list[list[int]]:
    """The assignment (units per team) after swaps of equal-sized units between teams while
    the quality improves: each round takes the best swaps on teams no better swap touched (with
    roles, only swaps that leave both teams able to seat their players)."""
    team_of = np.empty(len(size), dtype=np.int64)
    for team, members in enumerate(assignment):
        team_of[members] = team
    mus = np.asarray(mu, dtype=np.float64)
    spreads_of = np.asarray(spread, dtype=np.float64)
    sizes = np.asarray(size, dtype=np.int64)
    first, second = np.triu_indices(len(sizes), 1)
    same = sizes[first] == sizes[second]
    first, second = first[same], second[same]
    teams = len(assignment)
    for _ in range(CLIMB_ROUNDS):
        means = np.bincount(team_of, weights=mus, minlength=teams).astype(np.float64)
        spreads = np.bincount(team_of, weights=spreads_of, minlength=teams).astype(np.float64)
        current = _log_score(means, spreads)
        a, b = team_of[first], team_of[second]
        cross = np.flatnonzero(a != b)
        u, v, a, b = first[cross], second[cross], a[cross], b[cross]
        d_mu, d_spread = mus[v] - mus[u], spreads_of[v] - spreads_of[u]
        new_ma, new_mb = means[a] + d_mu, means[b] - d_mu
        new_da, new_db = spreads[a] + d_spread, spreads[b] - d_spread
        inverse = (1.0 / spreads).sum() - 1.0 / spreads[a] - 1.0 / spreads[b] + 1.0 / new_da + 1.0 / new_db
        weighted = (means / spreads).sum() - means[a] / spreads[a] - means[b] / spreads[b]
        weighted = weighted + new_ma / new_da + new_mb / new_db
        squared = (means**2 / spreads).sum() - means[a] ** 2 / spreads[a] - means[b] ** 2 / spreads[b]
        squared = squared + new_ma**2 / new_da + new_mb**2 / new_db
        logs = (
            np.log(spreads).sum() - np.log(spreads[a]) - np.log(spreads[b]) + np.log(new_da) + np.log(new_db)
        )
        score = -0.5 * (logs + np.log(inverse)) - 0.5 * (squared - weighted**2 / inverse)
        better = np.flatnonzero(score > current + 1e-12)
        if not len(better):
            break
        touched: set[int] = set()
        moved = False
        for k in better[np.argsort(-score[better], kind="stable")].tolist():
            team_a, team_b = int(a[k]), int(b[k])
            if team_a in touched or team_b in touched:
                continue
            if roles is not None and not _swap_fits(roles, team_of, int(u[k]), int(v[k])):
                continue
            touched.update((team_a, team_b))
            team_of[u[k]], team_of[v[k]] = team_b, team_a
            moved = True
        if not moved:
            break
    return [np.flatnonzero(team_of == team).tolist() for team in range(teams)]


def _log_score(means: npt.NDArray[np.float64], spreads: npt.NDArray[np.float64]) -> float:
    """log q of eq. 7 up to a term of the team sizes alone (see _climb)."""
    inverse = float((1.0 / spreads).sum())
    weighted = float((means / spreads).sum())
    return float(
        -0.5 * (np.log(spreads).sum() + np.log(inverse))
        - 0.5 * ((means**2 / spreads).sum() - weighted**2 / inverse)
    )


def _swap_fits(roles: UnitRoles, team_of: npt.NDArray[np.int64], u: int, v: int) -> bool:
    """Whether both teams still seat their players with units u and v swapped."""
    a, b = int(team_of[u]), int(team_of[v])
    team_a = [w for w in np.flatnonzero(team_of == a).tolist() if w != u] + [v]
    team_b = [w for w in np.flatnonzero(team_of == b).tolist() if w != v] + [u]
    return roles.fits(team_a) and roles.fits(team_b)
