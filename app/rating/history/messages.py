"""The messages of a flat history, computed for many skills or games at once.

All messages are Gaussians in natural parameters (precision pi, precision·mean tau); the
flat message is (0, 0), so a skill's posterior is the sum forward + backward + the sum of
its games' messages, and a game's prior for a player (the cavity) is that posterior minus
the game's own message (seed 001 §2.3, as in the package).
"""

from __future__ import annotations

import numpy as np

from app.rating import truncation_arrays
from app.rating.history.game import NEGLIGIBLE_W, likelihoods, moments
from app.rating.history.gaussian import INF
from app.rating.history.schedule import Group
from app.rating.history.structure import Array, Flat, Index


def _drift(pi: Array, tau: Array, drift: Array) -> tuple[Array, Array]:
    """Seed 001 eq. 1: the variance grows by gamma²·elapsed (a point mass stays one)."""
    var = 1.0 / pi + drift
    new_pi, new_tau = 1.0 / var, tau / pi / var
    if np.isinf(pi).any():
        point = np.isinf(pi)
        new_pi, new_tau = np.where(point, pi, new_pi), np.where(point, tau, new_tau)
    return new_pi, new_tau


def refresh(flat: Flat, skills: Index) -> None:
    """Forward messages into `skills` from their players' previous skills (the online pass):
    that skill's forward message times its games', drifted; the prior at first play."""
    if len(skills) == 0:
        return
    prev = flat.skill_prev[skills]
    player = flat.skill_player[skills]
    known = np.maximum(prev, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(prev >= 0, flat.fwd_pi[known] + flat.lik_pi[known], 0.0)
        tau = np.where(prev >= 0, flat.fwd_tau[known] + flat.lik_tau[known], 0.0)
        new_pi, new_tau = _drift(pi, tau, flat.drift[skills])
        flat.fwd_pi[skills] = np.where(pi == 0.0, flat.prior_pi[player], new_pi)
        flat.fwd_tau[skills] = np.where(pi == 0.0, flat.prior_tau[player], new_tau)


def refresh_backward(flat: Flat, skills: Index, following: Index) -> None:
    """Backward messages into `skills` from their players' next skills: that skill's games'
    messages times its backward message, drifted back by its elapsed time (the package's
    backward_prior_out); flat for a player's last skill."""
    if len(skills) == 0:
        return
    nxt = following[skills]
    known = np.maximum(nxt, 0)
    has = nxt >= 0
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(has, flat.lik_pi[known] + flat.bwd_pi[known], 0.0)
        tau = np.where(has, flat.lik_tau[known] + flat.bwd_tau[known], 0.0)
        new_pi, new_tau = _drift(pi, tau, flat.drift[known])
        informed = pi > 0.0
        flat.bwd_pi[skills] = np.where(informed, new_pi, 0.0)
        flat.bwd_tau[skills] = np.where(informed, new_tau, 0.0)


def update(flat: Flat, group: Group) -> None:
    """Re-run the group's games with their cavities, and swap in their new messages."""
    one_by_one = list(group.general)
    if len(group.games):
        one_by_one.extend(_two_teams(flat, group))
    for game in one_by_one:
        _general(flat, game)


def _two_teams(flat: Flat, group: Group) -> list[int]:
    """Game's closed form for two teams (seed 001 §2; seed 000 Table 1), one element per game.
    Returns the games left to the general path: those with an improper cavity."""
    entries, games = group.entries, group.games
    s = flat.entry_skill[entries]
    own_pi, own_tau = flat.own_pi[entries], flat.own_tau[entries]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cav_pi = flat.fwd_pi[s] + flat.bwd_pi[s] + flat.lik_pi[s] - own_pi
        cav_tau = flat.fwd_tau[s] + flat.bwd_tau[s] + flat.lik_tau[s] - own_tau
        proper = (cav_pi > 0.0) & (cav_pi < INF)
        mu = cav_tau / cav_pi
        var = 1.0 / cav_pi
        beta2 = group.beta2
        count = 2 * len(games)
        if group.duels:
            # One player a team: entry i is team slot i, and the team sums are the players'.
            perf_var = var + beta2
            team_mean, team_var = mu, perf_var
        else:
            weight = flat.weight[entries]
            perf_var = weight * weight * (var + beta2)
            team_mean = np.asarray(np.bincount(group.slots, weight * mu, count), dtype=np.float64)
            team_var = np.asarray(np.bincount(group.slots, perf_var, count), dtype=np.float64)
        m0, m1, v0, v1 = team_mean[0::2], team_mean[1::2], team_var[0::2], team_var[1::2]
        sign, tie, margin = flat.sign[games], flat.tie[games], flat.margin[games]
        mean = sign * (m0 - m1)
        var_d = v0 + v1
        flat.log_evidence[games] = truncation_arrays.log_outcome(mean, np.sqrt(var_d), margin, tie)
        d_pi, d_tau = truncation_arrays.message(mean, var_d, margin, tie)
        # d_pi·var_d = w/(1 − w): a negligible w is the flat message, as in Game.
        informative = d_pi * var_d > NEGLIGIBLE_W
        d_mu = sign * (d_tau / d_pi)
        d_var = 1.0 / d_pi
        # t_first = t_second + d and t_second = t_first − d, each with the other team's prior.
        msg_mean = np.empty(count)
        msg_var = np.empty(count)
        msg_mean[0::2], msg_mean[1::2] = m1 + d_mu, m0 - d_mu
        msg_var[0::2], msg_var[1::2] = v1 + d_var, v0 + d_var
        flat_game = ~informative
        if group.duels:
            new_var = msg_var + beta2
            new_pi = 1.0 / new_var
            new_tau = msg_mean / new_var
            flat_entry = np.repeat(flat_game, 2)
        else:
            # A player's skill gets the team's message less everyone else's part, over w.
            slots = group.slots
            rest_mean = team_mean[slots] - weight * mu
            rest_var = (team_var[slots] - perf_var) + weight * weight * beta2
            new_var = (msg_var[slots] + rest_var) / (weight * weight)
            new_pi = 1.0 / new_var
            new_tau = (msg_mean[slots] - rest_mean) / weight / new_var
            flat_entry = flat_game[slots // 2] | (weight == 0.0)
        new_pi = np.where(flat_entry, 0.0, new_pi)
        new_tau = np.where(flat_entry, 0.0, new_tau)
    if proper.all():
        bad: list[int] = []
    else:
        slots = np.arange(len(entries), dtype=np.int64) if group.duels else group.slots
        bad_games = np.zeros(len(games), dtype=bool)
        bad_games[slots[~proper] // 2] = True
        bad = games[bad_games].tolist()
        keep = ~bad_games[slots // 2]
        entries, s = entries[keep], s[keep]
        own_pi, own_tau, new_pi, new_tau = own_pi[keep], own_tau[keep], new_pi[keep], new_tau[keep]
    _swap(flat, entries, s, (own_pi, own_tau), (new_pi, new_tau))
    return bad


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
