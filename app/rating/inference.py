"""Posterior skills for one match: TrueSkill's factor graph solved by message passing.

Seed 000 Fig. 1: skills s_i -> performances p_i ~ N(s_i, beta²) -> team performances
t_k = Σ w_i·p_i -> differences d_k = t_k − t_{k+1} of teams sorted by rank, each with a
truncation factor: d_k > eps (a win) or |d_k| <= eps (a tie).

Everything below the differences is Gaussian and tree-shaped, so we integrate the
players out exactly: team k's performance has the prior N(m_k, V_k) with
m_k = Σ w_i·mu_i and V_k = Σ w_i²·(sigma_i² + tau² + beta²) (tau is added before the
update, seed 000 §2). Only the chain of truncation factors needs expectation
propagation. With two teams there is one truncation factor and one exact pass; with
more we sweep the chain forward and backward (the schedule of Fig. 1) until the
messages stop moving: chain_sweeps in general, and for chains of up to 24 factors the
straight-line kernels of app/rating/chain_kernels.py. The messages that reach each team
are then pushed back to its players by the exact Gaussian (Kalman) update.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from app.rating import plain_kernels, truncation
from app.rating.chain_kernels import MAX_LINKS, kernel
from app.rating.errors import TIE_WITHOUT_DRAWS, RatingInputError
from app.rating.normal import CONTINUED_FRACTION_FROM, INV_SQRT_2PI, SQRT2
from app.rating.rating import Rating, trusted_rating

_FAR = -CONTINUED_FRACTION_FROM * SQRT2
_TWO_INV_SQRT_2PI = 2.0 * INV_SQRT_2PI
_MINUS_INV_SQRT2 = -1.0 / SQRT2

# Sweeps stop when no truncation factor's V and W moved more than this in a sweep; the
# ratings are then within ~1e-9 of the fixed point (tests/rating check it).
TOLERANCE = 1e-9
MAX_SWEEPS = 200


def draw_margin(draw_z: float, players: int, beta: float) -> float:
    """Seed 000 §4.1: eps = Φ⁻¹((p + 1)/2)·sqrt(n1 + n2)·beta for the two compared teams."""
    return draw_z * math.sqrt(players) * beta


def comparison_margin(
    draw_z: float, beta: float, ratings: list[list[Rating]], noise: list[float] | None, a: int, b: int
) -> float:
    """The draw margin between teams a and b (see chain_margins)."""
    return chain_margins(draw_z, beta, ratings, noise, [a, b])[0]


def chain_margins(
    draw_z: float, beta: float, ratings: list[list[Rating]], noise: list[float] | None, order: list[int]
) -> list[float]:
    """The draw margin between each pair of neighbouring teams along `order`: seed 000 §4.1 by
    player counts, or with `noise` (per-team Σ w²·beta²) Φ⁻¹((p + 1)/2)·sqrt(noise_a + noise_b),
    which is the same for TrueSkill's sum and scales with any other team-performance function."""
    sqrt = math.sqrt
    if noise is None:
        # draw_margin's expression, so the chain and the two-team path round alike.
        return [draw_z * sqrt(len(ratings[a]) + len(ratings[b])) * beta for a, b in pairwise(order)]
    return [draw_z * sqrt(noise[a] + noise[b]) for a, b in pairwise(order)]


def two_teams(
    winner: list[Rating],
    loser: list[Rating],
    winner_weights: list[float] | None,
    loser_weights: list[float] | None,
    tie: bool,
    margin: float,
    beta2: float,
    tau2: float,
) -> tuple[list[Rating], list[Rating]]:
    """The exact posterior for two teams: one truncation factor, one pass, no iteration.

    With d = t_w − t_l ~ N(m, c²), t = m/c and e = eps/c (seed 000 §3, Table 1 and V, W):
        mu_i'    = mu_i ± w_i·s_i²/c · V(t, e)
        sigma_i'² = s_i²·(1 − w_i²·s_i²/c² · W(t, e)),   s_i² = sigma_i² + tau².
    1 − ratio·W is evaluated as (1 − ratio) + ratio·(1 − W) so upsets keep their digits.
    """
    m = 0.0
    var = 0.0
    if winner_weights is None:
        for mu, sigma in winner:
            m += mu
            var += sigma * sigma + tau2 + beta2
    else:
        for (mu, sigma), w in zip(winner, winner_weights, strict=True):
            m += w * mu
            var += w * w * (sigma * sigma + tau2 + beta2)
    if loser_weights is None:
        for mu, sigma in loser:
            m -= mu
            var += sigma * sigma + tau2 + beta2
    else:
        for (mu, sigma), w in zip(loser, loser_weights, strict=True):
            m -= w * mu
            var += w * w * (sigma * sigma + tau2 + beta2)
    c = math.sqrt(var)
    if tie:
        v, w_trunc, rest = truncation.draw(m / c, margin / c)
    else:
        x = (m - margin) / c
        if x > _FAR:
            v = _TWO_INV_SQRT_2PI * math.exp(-0.5 * x * x) / math.erfc(x * _MINUS_INV_SQRT2)
            w_trunc = v * (v + x)
            rest = 1.0 - w_trunc
        else:
            v, w_trunc, rest = truncation.win(x, 0.0)
    shift = v / c
    trusted = trusted_rating
    sqrt = math.sqrt
    out_winner = []
    if winner_weights is None:
        for mu, sigma in winner:
            s2 = sigma * sigma + tau2
            ratio = s2 / var
            out_winner.append(trusted((mu + s2 * shift, sqrt(s2 * ((1.0 - ratio) + ratio * rest)))))
    else:
        for (mu, sigma), w in zip(winner, winner_weights, strict=True):
            s2 = sigma * sigma + tau2
            ratio = w * w * s2 / var
            out_winner.append(trusted((mu + w * s2 * shift, sqrt(s2 * ((1.0 - ratio) + ratio * rest)))))
    out_loser = []
    if loser_weights is None:
        for mu, sigma in loser:
            s2 = sigma * sigma + tau2
            ratio = s2 / var
            out_loser.append(trusted((mu - s2 * shift, sqrt(s2 * ((1.0 - ratio) + ratio * rest)))))
    else:
        for (mu, sigma), w in zip(loser, loser_weights, strict=True):
            s2 = sigma * sigma + tau2
            ratio = w * w * s2 / var
            out_loser.append(trusted((mu - w * s2 * shift, sqrt(s2 * ((1.0 - ratio) + ratio * rest)))))
    return out_winner, out_loser


def chain_order(ranks: list[float]) -> list[int]:
    """The order of the teams along the chain: by rank, tied teams as listed.

    The chain of |t_k − t_{k+1}| <= eps tie factors is not symmetric in three or more
    tied teams (seed 002 §2), so their listed order matters. We keep it, as trueskill,
    Moserware and Microsoft's calculator do (the golden vectors depend on it); the
    tie-layer model of seed 002 has no such dependence.
    """
    return sorted(range(len(ranks)), key=ranks.__getitem__)


def team_priors(
    ratings: list[list[Rating]], weights: list[list[float]], beta2: float, tau2: float
) -> tuple[list[float], list[float]]:
    """Each team performance's prior N(m_k, V_k): players integrated out, tau added first."""
    means = []
    variances = []
    for team, team_weights in zip(ratings, weights, strict=True):
        m = 0.0
        v = 0.0
        for (mu, sigma), w in zip(team, team_weights, strict=True):
            m += w * mu
            v += w * w * (sigma * sigma + tau2 + beta2)
        means.append(m)
        variances.append(v)
    return means, variances


def update_ratings(
    ratings: list[list[Rating]],
    weights: list[list[float]],
    ranks: list[float],
    beta: float,
    tau: float,
    draw_z: float,
    tolerance: float = TOLERANCE,
    max_sweeps: int = MAX_SWEEPS,
    noise: list[float] | None = None,
) -> list[list[Rating]]:
    """New ratings, in the caller's team order, after a match with the given ranks.

    `weights` are the coefficients of t_k = Σ w_i·p_i; `noise` selects the draw margin
    (see comparison_margin).
    """
    count = len(ratings)
    if count == 2:
        first = 0 if ranks[0] <= ranks[1] else 1
        second = 1 - first
        tie = ranks[0] == ranks[1]
        margin = comparison_margin(draw_z, beta, ratings, noise, 0, 1)
        if tie and margin <= 0.0:
            raise RatingInputError(TIE_WITHOUT_DRAWS)
        top, bottom = two_teams(
            ratings[first],
            ratings[second],
            weights[first],
            weights[second],
            tie,
            margin,
            beta * beta,
            tau * tau,
        )
        return [top, bottom] if first == 0 else [bottom, top]
    tau2 = tau * tau
    means, variances, to_pi, to_tau = chain_team_messages(
        ratings, weights, ranks, beta, tau2, draw_z, tolerance, max_sweeps, noise
    )
    return push_to_players(ratings, weights, means, variances, to_pi, to_tau, tau2)


def chain_team_messages(
    ratings: list[list[Rating]],
    weights: list[list[float]],
    ranks: list[float],
    beta: float,
    tau2: float,
    draw_z: float,
    tolerance: float,
    max_sweeps: int,
    noise: list[float] | None,
) -> tuple[list[float], list[float], list[float], list[float]]:
    """The team priors (means, variances) and the messages TrueSkill's chain sends each
    team, as (precision, precision·mean), all in the caller's team order."""
    count = len(ratings)
    team_means, team_variances = team_priors(ratings, weights, beta * beta, tau2)
    order = chain_order(ranks)
    # Teams are usually listed in finishing order; then nothing needs reordering.
    listed = order == list(range(count))
    margins = chain_margins(draw_z, beta, ratings, noise, order)
    ranked = ranks if listed else [ranks[team] for team in order]
    ties = chain_ties(ranked, margins)
    prior_var = team_variances if listed else [team_variances[team] for team in order]
    prior_mean = team_means if listed else [team_means[team] for team in order]
    msg_pi, msg_tau = chain_messages(prior_var, prior_mean, margins, ties, tolerance, max_sweeps)
    if listed:
        return team_means, team_variances, msg_pi, msg_tau
    to_pi = [0.0] * count
    to_tau = [0.0] * count
    for position, team in enumerate(order):
        to_pi[team] = msg_pi[position]
        to_tau[team] = msg_tau[position]
    return team_means, team_variances, to_pi, to_tau


def chain_ties(ranked: list[float], margins: list[float]) -> list[bool]:
    """Which neighbouring teams along the chain tie, given their ranks in chain order."""
    ties = [a == b for a, b in pairwise(ranked)]
    if True in ties and min(margins) <= 0.0:
        for tie, margin in zip(ties, margins, strict=True):
            if tie and margin <= 0.0:
                raise RatingInputError(TIE_WITHOUT_DRAWS)
    return ties


def chain_messages(
    prior_var: list[float],
    prior_mean: list[float],
    margins: list[float],
    ties: list[bool],
    tolerance: float,
    max_sweeps: int,
) -> tuple[list[float], list[float]]:
    """The messages a chain of truncation factors sends each of its variables, as
    (precision, precision·mean), all in chain order: the straight-line kernel of its length
    where there is one, else chain_sweeps."""
    links = len(margins)
    if links <= MAX_LINKS:
        return kernel(links)(prior_var, prior_mean, margins, ties, tolerance, max_sweeps)
    prior_pi = [1.0 / v for v in prior_var]
    prior_tau = [m * p for m, p in zip(prior_mean, prior_pi, strict=True)]
    messages = ChainMessages.empty(links + 1)
    chain_sweeps(prior_pi, prior_tau, margins, ties, messages, tolerance, max_sweeps)
    return messages.received()


def update_plain_ratings(
    groups: Sequence[Sequence[Rating]],
    ranks: list[float],
    beta: float,
    tau2: float,
    draw_z: float,
    tolerance: float,
    max_sweeps: int,
) -> list[tuple[Rating, ...]]:
    """update_ratings for three or more teams of unit weights and TrueSkill's sum, the common
    call, in one pass over the teams each way (tests hold the two equal, bit for bit). Returns
    tuples."""
    count = len(groups)
    beta2 = beta * beta
    plan = plain_plan(tuple(ranks), tuple(map(len, groups)))
    if plan is not None:
        # The straight-line kernel of this shape: the same expressions, bit for bit.
        chain, tied, run = plan
        if chain is None:
            return run(groups, tied, tau2, beta2, beta, draw_z, tolerance, max_sweeps)
        chained = [groups[team] for team in chain]
        rated = run(chained, tied, tau2, beta2, beta, draw_z, tolerance, max_sweeps)
        results: list[tuple[Rating, ...]] = [()] * count
        for position, team in enumerate(chain):
            results[team] = rated[position]
        return results
    order = chain_order(ranks)
    sqrt = math.sqrt
    teams = [groups[team] for team in order]
    prior_var = [0.0] * count
    prior_mean = [0.0] * count
    margins = [0.0] * (count - 1)
    ties = [False] * (count - 1)
    # One pass in chain order: each team's prior, and its margin (draw_margin's expression)
    # and tie with the team before it.
    previous = ranks[order[0]]
    for k, group in enumerate(teams):
        m = 0.0
        v = 0.0
        for mu, sigma in group:
            m += mu
            # team_priors's expression with w = 1, so both paths round alike, bit for bit.
            v += sigma * sigma + tau2 + beta2
        prior_mean[k] = m
        prior_var[k] = v
        rank = ranks[order[k]]
        if k:
            margins[k - 1] = draw_z * sqrt(len(teams[k - 1]) + len(group)) * beta
            if rank == previous:
                if margins[k - 1] <= 0.0:
                    raise RatingInputError(TIE_WITHOUT_DRAWS)
                ties[k - 1] = True
        previous = rank
    msg_pi, msg_tau = chain_messages(prior_var, prior_mean, margins, ties, tolerance, max_sweeps)
    results = [()] * count
    trusted = trusted_rating
    for k, group in enumerate(teams):
        # push_to_players with every coefficient 1.
        var_t = prior_var[k]
        u_pi = msg_pi[k]
        inverse = 1.0 / (1.0 + u_pi * var_t)
        innovation = (msg_tau[k] - u_pi * prior_mean[k]) * inverse
        precision_gain = u_pi * inverse
        out = []
        for mu, sigma in group:
            s2 = sigma * sigma + tau2
            new_var = s2 - s2 * s2 * precision_gain
            if new_var <= 0.0:
                new_var = s2 * ((var_t - s2) / var_t + (s2 / var_t) * inverse)
            out.append(trusted((mu + s2 * innovation, sqrt(new_var))))
        results[order[k]] = tuple(out)
    return results


# (chain order or None, ties along the chain, kernel); see plain_plan.
PlainPlan = tuple[tuple[int, ...] | None, tuple[bool, ...], plain_kernels.PlainKernel]


@lru_cache(maxsize=plain_kernels.CACHED_SHAPES)
def plain_plan(ranks: tuple[float, ...], sizes: tuple[int, ...]) -> PlainPlan | None:
    """For update_plain_ratings: the chain order of the teams (None when it is the order they
    were given in), which neighbours along it tie, and the plain kernel of its shape; None
    when no kernel fits. Cached: a mode posts the same shapes and ranks again and again."""
    order = chain_order(list(ranks))
    chained = tuple(sizes[team] for team in order)
    if not plain_kernels.fits(chained):
        return None
    ranked = [ranks[team] for team in order]
    ties = tuple(a == b for a, b in pairwise(ranked))
    identity = order == list(range(len(ranks)))
    return (None if identity else tuple(order)), ties, plain_kernels.plain_kernel(chained)


@dataclass(slots=True)
class ChainMessages:
    """The messages of a chain of truncation factors on d_k = x_k − x_{k+1}, as
    (precision, precision·mean): left_* sent by factor k to x_k, right_* received by x_k
    from factor k − 1. last_v/last_w hold each factor's latest V and W."""

    left_pi: list[float]
    left_tau: list[float]
    right_pi: list[float]
    right_tau: list[float]
    last_v: list[float]
    last_w: list[float]

    @classmethod
    def empty(cls, count: int) -> ChainMessages:
        return cls([0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count)

    def received(self) -> tuple[list[float], list[float]]:
        """Per variable, the product of the messages the chain sends it."""
        count = len(self.left_pi)
        return (
            [self.right_pi[k] + self.left_pi[k] for k in range(count)],
            [self.right_tau[k] + self.left_tau[k] for k in range(count)],
        )


def chain_sweeps(
    prior_pi: list[float],
    prior_tau: list[float],
    margins: list[float],
    ties: list[bool],
    messages: ChainMessages,
    tolerance: float,
    max_sweeps: int,
) -> float:
    """EP over a chain of truncation factors on d_k = x_k − x_{k+1} (seed 000 Fig. 1).

    x_k has the prior (prior_pi[k], prior_tau[k]) in natural parameters; factor k says
    d_k > margins[k], or |d_k| <= margins[k] where ties[k]. Sweeps forward and back,
    updating `messages` in place, until no factor's V and W moved more than `tolerance`
    or `max_sweeps` is reached. Returns the largest move of the last sweep.
    """
    links = len(margins)
    left_pi = messages.left_pi
    left_tau = messages.left_tau
    right_pi = messages.right_pi
    right_tau = messages.right_tau
    last_v = messages.last_v
    last_w = messages.last_w
    # right_* is indexed by the receiving variable and left_* by the factor, so the cavity
    # lookups need no branches.
    schedule = list(range(links)) + list(range(links - 2, 0, -1))
    exp = math.exp
    erfc = math.erfc
    sqrt = math.sqrt
    moved = 0.0
    for _ in range(max_sweeps):
        moved = 0.0
        for k in schedule:
            j = k + 1
            a_var = 1.0 / (prior_pi[k] + right_pi[k])
            a_mean = (prior_tau[k] + right_tau[k]) * a_var
            b_var = 1.0 / (prior_pi[j] + left_pi[j])
            b_mean = (prior_tau[j] + left_tau[j]) * b_var
            mean = a_mean - b_mean
            var = a_var + b_var
            c = sqrt(var)
            if ties[k]:
                v, w, rest = truncation.draw(mean / c, margins[k] / c)
            else:
                x = (mean - margins[k]) / c
                if x > _FAR:
                    v = _TWO_INV_SQRT_2PI * exp(-0.5 * x * x) / erfc(x * _MINUS_INV_SQRT2)
                    w = v * (v + x)
                    rest = 1.0 - w
                else:
                    v, w, rest = truncation.win(x, 0.0)
            # The truncation factor's message to d_k: posterior over cavity, seed 000 Table 1.
            denom = var * rest
            d_pi = w / denom
            d_tau = (mean * w + c * v) / denom
            scale = 1.0 + d_pi * b_var
            left_pi[k] = d_pi / scale
            left_tau[k] = (d_tau + d_pi * b_mean) / scale
            scale = 1.0 + d_pi * a_var
            right_pi[j] = d_pi / scale
            right_tau[j] = (d_pi * a_mean - d_tau) / scale
            # Both moments must settle: in a symmetric tie V stays 0 while W moves.
            change = abs(v - last_v[k]) + abs(w - last_w[k])
            if change > moved:
                moved = change
            last_v[k] = v
            last_w[k] = w
        if moved <= tolerance:
            break
    return moved


def push_to_players(
    ratings: list[list[Rating]],
    weights: list[list[float]],
    means: list[float],
    variances: list[float],
    msg_pi: list[float],
    msg_tau: list[float],
    tau2: float,
) -> list[list[Rating]]:
    """Each team's message from below, pushed back to its players by the exact Gaussian
    (Kalman) update along t_k = Σ w_i·p_i, where cov(s_i, t_k) = w_i·s_i²."""
    results: list[list[Rating]] = []
    trusted = trusted_rating
    sqrt = math.sqrt
    for team, team_weights, var_t, mean_t, u_pi, u_tau in zip(
        ratings, weights, variances, means, msg_pi, msg_tau, strict=True
    ):
        inverse = 1.0 / (1.0 + u_pi * var_t)
        innovation = (u_tau - u_pi * mean_t) * inverse
        precision_gain = u_pi * inverse
        out = []
        for (mu, sigma), w in zip(team, team_weights, strict=True):
            s2 = sigma * sigma + tau2
            ws2 = w * s2
            new_var = s2 - ws2 * ws2 * precision_gain
            if new_var <= 0.0:
                new_var = s2 * ((var_t - w * ws2) / var_t + (w * ws2 / var_t) * inverse)
            out.append(trusted((mu + ws2 * innovation, sqrt(new_var))))
        results.append(out)
    return results
