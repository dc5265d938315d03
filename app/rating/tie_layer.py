"""Seed 002 §3: the tie layer, an extra level of the factor graph for multiway ties.

TrueSkill joins tied teams by a chain of |t_k − t_{k+1}| <= eps factors, so a tie of s teams
lets the ends drift 2(s−1)·eps apart and a lower-placed team can end above a higher-placed
one (seed 002 §2). Here every distinct place k has its own performance l_k:

    team j at place k:   u_j = l_k − t_j,  I(|u_j| <= eps)
    neighbouring places: d_k = l_k − l_{k+1},  I(d_k > 2·eps)

so all teams of a place sit within eps of one value and the places are ordered. The graph
is a tree (a chain of places with teams hanging off them). Algorithms 1–3 of the paper pass
messages down from the players to l, iterate the order factors and the tie factors until
they settle, and pass the result back up; we follow that schedule with the message algebra
of seed 000 Table 1 in natural parameters:

1. Each tie factor starts from the Gaussian projection of its box alone, N(0, eps²/3)
   (Algorithm 1 initialises it by a truncation instead; the fixed point is the same).
2. Repeat: one forward–backward sweep of the order factors over the places, whose
   "priors" are the products of their teams' messages (Algorithm 2, first loop); then every
   tie factor is re-fitted to its cavity (Algorithm 2, second loop).
3. Each team receives l_k's cavity minus u_j (Algorithm 2, last loop), which
   inference.push_to_players takes back to the players (Algorithm 3).

Places with one team keep their tie factor, as in the paper's figure 2: it is what makes
two single teams a place apart need a gap of 0 rather than 2·eps on average.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from app.rating import truncation
from app.rating.inference import ChainMessages, chain_sweeps

# TrueSkill's chain of |d| <= eps factors (the default), or the layer of this module.
TieModel = Literal["chain", "tie-layer"]
TIE_MODELS: tuple[str, ...] = get_args(TieModel)


def places_of(ranks: list[float]) -> list[list[int]]:
    """Team indices grouped by rank, best place first, teams of a place as listed."""
    order = sorted(range(len(ranks)), key=ranks.__getitem__)
    places: list[list[int]] = []
    previous: float | None = None
    for team in order:
        if previous is None or ranks[team] != previous:
            places.append([])
            previous = ranks[team]
        places[-1].append(team)
    return places


def team_messages(
    means: list[float],
    variances: list[float],
    ranks: list[float],
    eps: float,
    tolerance: float,
    max_sweeps: int,
) -> tuple[list[float], list[float]]:
    """The message the tie layer sends each team performance t_j ~ N(means[j], variances[j]),
    as (precision, precision·mean), in the callers' team order. eps must be positive."""
    count = len(means)
    places = places_of(ranks)
    place_count = len(places)
    # Tie factor messages to u_j, natural parameters; start from the box's own projection.
    u_pi = [3.0 / (eps * eps)] * count
    u_tau = [0.0] * count
    # Messages from team j up to its place: l = t_j + u_j, so N(m_j + E u_j, V_j + Var u_j).
    h_pi = [0.0] * count
    h_tau = [0.0] * count
    place_pi = [0.0] * place_count
    place_tau = [0.0] * place_count
    for k, teams in enumerate(places):
        for j in teams:
            u_var = 1.0 / u_pi[j]
            h_pi[j] = 1.0 / (variances[j] + u_var)
            h_tau[j] = (means[j] + u_tau[j] * u_var) * h_pi[j]
            place_pi[k] += h_pi[j]
            place_tau[k] += h_tau[j]
    chain = ChainMessages.empty(place_count)
    margins = [2.0 * eps] * (place_count - 1)
    ties = [False] * (place_count - 1)
    last_v = [0.0] * count
    last_w = [0.0] * count
    sqrt = math.sqrt
    draw = truncation.draw
    for _ in range(max_sweeps):
        moved = chain_sweeps(place_pi, place_tau, margins, ties, chain, 0.0, 1) if place_count > 1 else 0.0
        left_pi, left_tau, right_pi, right_tau = (
            chain.left_pi,
            chain.left_tau,
            chain.right_pi,
            chain.right_tau,
        )
        for k, teams in enumerate(places):
            from_order_pi = left_pi[k] + right_pi[k]
            from_order_tau = left_tau[k] + right_tau[k]
            shared = len(teams) > 1
            for j in teams:
                # Cavity of l_k without team j, then of u_j = l_k − t_j.
                if shared:
                    cav_pi = place_pi[k] - h_pi[j] + from_order_pi
                    cav_tau = place_tau[k] - h_tau[j] + from_order_tau
                else:
                    cav_pi = from_order_pi
                    cav_tau = from_order_tau
                cav_var = 1.0 / cav_pi
                cav_mean = cav_tau * cav_var
                mean = cav_mean - means[j]
                var = cav_var + variances[j]
                c = sqrt(var)
                v, w, rest = draw(mean / c, eps / c)
                denom = var * rest
                u_pi[j] = w / denom
                u_tau[j] = (mean * w + c * v) / denom
                u_var = 1.0 / u_pi[j]
                new_pi = 1.0 / (variances[j] + u_var)
                new_tau = (means[j] + u_tau[j] * u_var) * new_pi
                place_pi[k] += new_pi - h_pi[j]
                place_tau[k] += new_tau - h_tau[j]
                h_pi[j] = new_pi
                h_tau[j] = new_tau
                change = abs(v - last_v[j]) + abs(w - last_w[j])
                if change > moved:
                    moved = change
                last_v[j] = v
                last_w[j] = w
            # Re-sum rather than carry the increments, so rounding cannot build up.
            place_pi[k] = math.fsum(h_pi[j] for j in teams)
            place_tau[k] = math.fsum(h_tau[j] for j in teams)
        if moved <= tolerance:
            break
    # Down to the teams: t_j = l_k − u_j with l_k's cavity (everything but team j).
    out_pi = [0.0] * count
    out_tau = [0.0] * count
    for k, teams in enumerate(places):
        from_order_pi = chain.left_pi[k] + chain.right_pi[k]
        from_order_tau = chain.left_tau[k] + chain.right_tau[k]
        shared = len(teams) > 1
        for j in teams:
            cav_pi = from_order_pi + (place_pi[k] - h_pi[j] if shared else 0.0)
            cav_var = 1.0 / cav_pi
            cav_mean = (from_order_tau + (place_tau[k] - h_tau[j] if shared else 0.0)) * cav_var
            u_var = 1.0 / u_pi[j]
            out_pi[j] = 1.0 / (cav_var + u_var)
            out_tau[j] = (cav_mean - u_tau[j] * u_var) * out_pi[j]
    return out_pi, out_tau
