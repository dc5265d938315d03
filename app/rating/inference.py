r"""One match's posterior skills: TrueSkill's factor graph (seed 000 Fig. 1) by message passing.

The graph of a match of teams [1], [2], [1] where the second and third tie::

    prior         N(s_i; mu_i, sigma_i² + tau²)     s1     s2   s3     s4    skills
                                                    |      |    |      |
    performance   N(p_i; s_i, beta²)                p1     p2   p3     p4    performances
                                                    |       \  /       |
    team sum      t_k = Σ w_i·p_i                   t1       t2        t3    team performances
                                                      \     /  \      /
    difference    d_k = t_k − t_{k+1}                   d1         d2        differences
                                                        |          |
    truncation    I(d_k > eps) or I(|d_k| <= eps)      [>]        [=]        the result

Teams are sorted by rank first, so that each difference compares neighbours.

Downward (seed 000 Table 1, rows 1–3): everything above the differences is Gaussian and
tree-shaped, so the players integrate out exactly. Team k's performance has the prior
N(m_k, V_k) with m_k = Σ w_i·mu_i and V_k = Σ w_i²·(sigma_i² + tau² + beta²); tau is
added before the match (seed 000 §2). `team_performances` computes them.

The truncation factors are not Gaussian. Expectation propagation replaces each one's
message by the moment-matched posterior of d_k divided by its cavity (seed 000 eq. 6),
with the V and W functions of `truncation` (Table 1, last row):

    two teams      one factor, one exact pass: `two_teams`, the closed form.
    three or more  the factors share the team performances between them, so the
                   messages are swept forward and back along the chain (the schedule
                   of Fig. 1) until they settle: `chain_sweeps`.

Upward (Table 1 read bottom-up): each team's message from below is pushed to its
players by the exact Gaussian update along t_k = Σ w_i·p_i, where cov(s_i, t_k) = w_i·s_i²:
`push_to_players`, the one place a player's rating changes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from app.rating.errors import TIE_WITHOUT_DRAWS, RatingInputError
from app.rating.rating import Rating
from app.rating.truncation import draw, win

# No zip here takes strict=True: the lists are built in one shape by read_teams and this
# module, and any keyword sends zip() down CPython's slow call path, which in these hot
# loops costs as much as the arithmetic (pyproject.toml lets B905 pass for this file).

# Sweeps stop when no truncation factor's V and W moved more than this in a sweep; the
# ratings are then within ~1e-9 of the fixed point (tests/rating check it).
TOLERANCE = 1e-9
MAX_SWEEPS = 200


def team_performances(
    ratings: list[list[Rating]], weights: list[list[float]], beta2: float, tau2: float
) -> tuple[list[float], list[float]]:
    """Each team performance's prior N(m_k, V_k): the prior, performance and team sum
    layers with the players integrated out (Table 1, rows 1–3), tau added first."""
    # math.fsum rounds each sum once, exactly, so a team's performance does not depend on the
    # order its players are listed in: a replay that meets the players in another order (by
    # id, or after an erasure renamed one) rates to the same bits. The terms are gathered in
    # one loop and summed as lists: generator expressions, resumed once per player, cost
    # more than the arithmetic.
    fsum = math.fsum
    means = []
    variances = []
    for team, team_weights in zip(ratings, weights):
        mean_terms = []
        variance_terms = []
        for (mu, sigma), w in zip(team, team_weights):
            mean_terms.append(w * mu)
            variance_terms.append(w * w * (sigma * sigma + tau2 + beta2))
        means.append(fsum(mean_terms))
        variances.append(fsum(variance_terms))
    return means, variances


def chain_order(ranks: list[float]) -> list[int]:
    """The order of the teams along the chain: by rank, tied teams as listed.

    The chain of |t_k − t_{k+1}| <= eps tie factors is not symmetric in three or more
    tied teams (seed 002 §2), so their listed order matters. We keep it, as trueskill,
    Moserware and Microsoft's calculator do (the golden vectors depend on it); the
    tie-layer model of seed 002 has no such dependence.
    """
    return sorted(range(len(ranks)), key=ranks.__getitem__)


def chain_ties(ranked: list[float], margins: list[float]) -> list[bool]:
    """Which neighbouring teams along the chain tie, given their ranks in chain order."""
    ties = []
    for previous, rank, margin in zip(ranked, ranked[1:], margins):
        if rank == previous and margin <= 0.0:
            raise RatingInputError(TIE_WITHOUT_DRAWS)
        ties.append(rank == previous)
    return ties


# Per team, what its players learn from the match: the shift g_k and the kept share of
# variance q_k of push_to_players.
TeamUpdates = tuple[list[float], list[float]]


def two_teams(
    means: list[float], variances: list[float], winner: int, tie: bool, margin: float
) -> TeamUpdates:
    """The exact update of two teams: one truncation factor, one pass, no iteration.

    With d = t_winner − t_loser ~ N(m, c²), t = m/c and e = eps/c, Table 1's last row gives
    d's posterior N(m + c·V, c²·(1 − W)). Along d = t_w − t_l, team k's performance moves by
    ±V_k·V/c and keeps (V_other + V_k·(1 − W))/c² of its variance: written with 1 − W, so
    an upset (W → 1) keeps its digits.
    """
    loser = 1 - winner
    var = variances[0] + variances[1]
    c = math.sqrt(var)
    m = means[winner] - means[loser]
    v, _, rest = draw(m / c, margin / c) if tie else win((m - margin) / c)
    shift = v / c
    shifts = [shift, -shift] if winner == 0 else [-shift, shift]
    keeps = [(variances[1] + variances[0] * rest) / var, (variances[0] + variances[1] * rest) / var]
    return shifts, keeps


@dataclass(slots=True)
class ChainMessages:
    """The messages of a chain of truncation factors on d_k = x_k − x_{k+1}, in natural
    parameters (precision, precision·mean): left_* sent by factor k to x_k, right_* received
    by x_k from factor k − 1. last_v/last_w hold each factor's latest V and W."""

    left_pi: list[float]
    left_tau: list[float]
    right_pi: list[float]
    right_tau: list[float]
    last_v: list[float]
    last_w: list[float]

    @classmethod
    def empty(cls, count: int) -> ChainMessages:
        return cls([0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count, [0.0] * count)


# One visit of a sweep: (factor, sends forward to x_{k+1}, sends back to x_k).
Visit = tuple[int, bool, bool]


@functools.cache
def sweep_schedule(links: int) -> tuple[tuple[Visit, ...], tuple[Visit, ...]]:
    """The two passes of a sweep over a chain of `links` factors (seed 000 Fig. 1): forward
    over every factor, then back over the inner ones. A visit's message the other way would
    be overwritten before anything reads it; the end factors send both, as no visit from the
    other side follows. Built once per chain length: a match's shape repeats."""
    last = links - 1
    forward = tuple((k, True, k in (0, last)) for k in range(links))
    backward = tuple((k, False, True) for k in range(links - 2, 0, -1))
    return forward, backward


def chain_sweeps(
    prior_pi: list[float],
    prior_tau: list[float],
    margins: list[float],
    ties: list[bool],
    messages: ChainMessages,
    tolerance: float,
    max_sweeps: int,
) -> float:
    """Expectation propagation over a chain of truncation factors on d_k = x_k − x_{k+1}.

    x_k has the prior (prior_pi[k], prior_tau[k]); factor k says d_k > margins[k], or
    |d_k| <= margins[k] where ties[k]. The schedule of seed 000 Fig. 1: forward over every
    factor, back over the inner ones, updating `messages` in place, until no factor's V and W
    moved more than `tolerance` (|dV| + |dW|, at most) since its previous visit, or
    `max_sweeps` is reached. Returns a bound on the largest move of the last pass.
    """
    links = len(margins)
    left_pi = messages.left_pi
    left_tau = messages.left_tau
    right_pi = messages.right_pi
    right_tau = messages.right_tau
    last_v = messages.last_v
    last_w = messages.last_w
    passes = sweep_schedule(links)
    # Squared, so no call to abs(): dV² + dW² <= tolerance²/2 gives |dV| + |dW| <= tolerance.
    settled = 0.5 * tolerance * tolerance
    sqrt = math.sqrt
    moved = 0.0
    for _ in range(max_sweeps):
        moved = 0.0
        for schedule in passes:
            for k, forward, back in schedule:
                j = k + 1
                # The cavities: x_k without factor k's message, x_j without factor k's (eq. 5).
                a_var = 1.0 / (prior_pi[k] + right_pi[k])
                a_mean = (prior_tau[k] + right_tau[k]) * a_var
                b_var = 1.0 / (prior_pi[j] + left_pi[j])
                b_mean = (prior_tau[j] + left_tau[j]) * b_var
                # d_k's cavity, through the difference factor (Table 1, rows 3–4).
                mean = a_mean - b_mean
                var = a_var + b_var
                c = sqrt(var)
                v, w, rest = draw(mean / c, margins[k] / c) if ties[k] else win((mean - margins[k]) / c)
                # The truncation factor's message to d_k: posterior over cavity (eq. 6).
                denom = var * rest
                d_pi = w / denom
                d_tau = (mean * w + c * v) / denom
                # ... and on through the difference factor (Table 1, rows 3–4).
                if forward:
                    scale = 1.0 + d_pi * a_var
                    right_pi[j] = d_pi / scale
                    right_tau[j] = (d_pi * a_mean - d_tau) / scale
                if back:
                    scale = 1.0 + d_pi * b_var
                    left_pi[k] = d_pi / scale
                    left_tau[k] = (d_tau + d_pi * b_mean) / scale
                # Both moments must settle: in a symmetric tie V stays 0 while W moves.
                dv = v - last_v[k]
                dw = w - last_w[k]
                change = dv * dv + dw * dw
                if change > moved:
                    moved = change
                last_v[k] = v
                last_w[k] = w
            # The forward pass visits every factor: once none moved since its previous
            # visit, the backward pass could only confirm it, and is not run.
            if moved <= settled:
                return sqrt(2.0 * moved)
    return sqrt(2.0 * moved)


def chain(
    means: list[float],
    variances: list[float],
    order: list[int],
    margins: list[float],
    ties: list[bool],
    tolerance: float,
    max_sweeps: int,
) -> tuple[list[float], list[float]]:
    """The message the chain of truncation factors sends each team performance, as
    (precision, precision·mean) in team order; the teams lie along the chain in `order`,
    margins and ties are along the chain."""
    count = len(order)
    prior_pi = [0.0] * count
    prior_tau = [0.0] * count
    for position, team in enumerate(order):
        pi = prior_pi[position] = 1.0 / variances[team]
        prior_tau[position] = means[team] * pi
    messages = ChainMessages.empty(count)
    chain_sweeps(prior_pi, prior_tau, margins, ties, messages, tolerance, max_sweeps)
    left_pi, left_tau, right_pi, right_tau = (
        messages.left_pi,
        messages.left_tau,
        messages.right_pi,
        messages.right_tau,
    )
    # What reaches each team is the product of the messages from its two factors (eq. 3).
    to_pi = [0.0] * count
    to_tau = [0.0] * count
    for position, team in enumerate(order):
        to_pi[team] = left_pi[position] + right_pi[position]
        to_tau[team] = left_tau[position] + right_tau[position]
    return to_pi, to_tau


def team_updates(
    means: list[float], variances: list[float], to_pi: list[float], to_tau: list[float]
) -> TeamUpdates:
    """push_to_players's g_k and q_k from each team's message from below (u_pi, u_tau).

    t_k's posterior is its prior N(m_k, V_k) times the message: its mean moves by
    V_k·(u_tau − u_pi·m_k)/(1 + u_pi·V_k), and it keeps 1/(1 + u_pi·V_k) of its variance.
    """
    shifts = []
    keeps = []
    for m, var, u_pi, u_tau in zip(means, variances, to_pi, to_tau):
        keep = 1.0 / (1.0 + u_pi * var)
        shifts.append((u_tau - u_pi * m) * keep)
        keeps.append(keep)
    return shifts, keeps


def push_to_players(
    ratings: list[list[Rating]],
    weights: list[list[float]],
    variances: list[float],
    updates: TeamUpdates,
    tau2: float,
) -> list[tuple[Rating, ...]]:
    """Each player's posterior from what their team learned (Table 1 read bottom-up).

    Team k's performance t_k ~ N(m_k, V_k) moved its mean by V_k·g_k and kept the share q_k
    of its variance. A player with s² = sigma² + tau² and coefficient w has cov(s, t_k) =
    w·s², so, with r = w²·s²/V_k,

        mu'     = mu + w·s²·g_k
        sigma'² = s²·((1 − r) + r·q_k)

    which stays positive however much the team learned.
    """
    results: list[tuple[Rating, ...]] = []
    # A Rating from values computed here: tuple.__new__, without Rating's validation.
    make = tuple.__new__
    sqrt = math.sqrt
    shifts, keeps = updates
    for team, team_weights, var_t, shift, keep in zip(ratings, weights, variances, shifts, keeps):
        out = []
        for (mu, sigma), w in zip(team, team_weights):
            s2 = sigma * sigma + tau2
            ratio = w * w * s2 / var_t
            out.append(make(Rating, (mu + w * s2 * shift, sqrt(s2 * ((1.0 - ratio) + ratio * keep)))))
        results.append(tuple(out))
    return results
