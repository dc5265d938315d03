"""The messages of a flat history: a pass, game by game (two-team games compiled, in
`kernel`; the others through game.likelihoods, here).

All messages are Gaussians in natural parameters (precision pi, precision·mean tau); the
flat message is (0, 0), so a skill's posterior is the sum forward + backward + the sum of
its games' messages, and a game's prior for a player (the cavity) is that posterior minus
the game's own message (seed 001 §2.3, as in the package).
"""

from __future__ import annotations

import numpy as np

from app.rating.history import kernel
from app.rating.history.game import likelihoods, moments
from app.rating.history.schedule import Pass
from app.rating.history.structure import Array, Flat, Index


def run(flat: Flat, work: Pass, following: Index | None) -> None:
    """One pass (schedule.Pass) in the package's order: the backward pass from `following`
    (each skill's player's next skill), or the forward one when None. Two-team games are
    solved by the compiled kernel; the rest, in their turn, by `_general`."""
    links = _NONE if following is None else following
    kernel.run(flat, work, following is not None, links, lambda game: _general(flat, game))


_NONE = np.zeros(0, dtype=np.int64)


def _swap(
    flat: Flat, entries: Index, skills: Index, old: tuple[Array, Array], new: tuple[Array, Array]
) -> None:
    """Replace the entries' messages `old` with `new` in their skills' sums (no skill twice)."""
    (own_pi, own_tau), (new_pi, new_tau) = old, new
    flat.lik_pi[skills] += new_pi - own_pi
    flat.lik_tau[skills] += new_tau - own_tau
    flat.own_pi[entries] = new_pi
    flat.own_tau[entries] = new_tau


def _general(flat: Flat, game: int) -> None:
    """Any game, through game.likelihoods, with each player's cavity as prior."""
    lo, hi = int(flat.game_start[game]), int(flat.game_start[game + 1])
    count = int(flat.entry_team[hi - 1]) + 1
    means: list[list[float]] = [[] for _ in range(count)]
    variances: list[list[float]] = [[] for _ in range(count)]
    betas: list[list[float]] = [[] for _ in range(count)]
    weights: list[list[float]] = [[] for _ in range(count)]
    for e in range(lo, hi):
        s = int(flat.entry_skill[e])
        mean, var = moments(
            float(flat.fwd_pi[s] + flat.bwd_pi[s] + flat.lik_pi[s] - flat.own_pi[e]),
            float(flat.fwd_tau[s] + flat.bwd_tau[s] + flat.lik_tau[s] - flat.own_tau[e]),
        )
        team = int(flat.entry_team[e])
        means[team].append(mean)
        variances[team].append(var)
        betas[team].append(float(flat.beta[int(flat.entry_player[e])]))
        weights[team].append(float(flat.weight[e]))
    result = flat.results.get(game) or _two_team_result(flat, game)
    played, log_evidence = likelihoods(means, variances, betas, weights, result, flat.p_draw)
    new = np.array([message for team in played for message in team])
    indices = np.arange(lo, hi, dtype=np.int64)
    old = (flat.own_pi[indices], flat.own_tau[indices])
    _swap(flat, indices, flat.entry_skill[indices], old, (new[:, 0], new[:, 1]))
    flat.log_evidence[game] = log_evidence


def _two_team_result(flat: Flat, game: int) -> list[float]:
    if flat.tie[game]:
        return [0.0, 0.0]
    return [1.0, 0.0] if flat.sign[game] > 0.0 else [0.0, 1.0]
