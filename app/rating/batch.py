"""Many independent two-team matches at once, with NumPy (for replays and imports).

The closed form of `inference.two_teams` and `inference.push_to_players` for unit weights,
one array element per match, with V and W from `truncation.win_array` and
`truncation.draw_array`: the vectorised form of the scalar formulas, whose far tails are
the scalar functions themselves.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.rating.errors import TIE_WITHOUT_DRAWS, RatingInputError
from app.rating.normal import draw_margin
from app.rating.truncation import draw_array, win_array

Array = npt.NDArray[np.float64]


def team_sums(values: Array) -> Array:
    """Each row's sum, independent of the order of the row's values (as the scalar engine's
    math.fsum is): a team listed in another order gives the same bits. Two values add alike
    in either order; wider rows are summed in sorted order."""
    if values.shape[1] <= 2:
        return values.sum(axis=1)  # type: ignore[no-any-return]
    return np.sort(values, axis=1).sum(axis=1)  # type: ignore[no-any-return]


def rate_two_team_batch(
    winner_mu: Array,
    winner_sigma: Array,
    loser_mu: Array,
    loser_sigma: Array,
    drawn: npt.NDArray[np.bool_] | None,
    beta: float,
    tau: float,
    draw_probability: float,
) -> tuple[Array, Array, Array, Array]:
    """New (winner mu, winner sigma, loser mu, loser sigma), arrays of shape (matches, team size).

    Row i is one match: the winner's players beat the loser's players, or drew with
    them where drawn[i] is true.
    """
    wm = np.asarray(winner_mu, dtype=np.float64)
    ws = np.asarray(winner_sigma, dtype=np.float64)
    lm = np.asarray(loser_mu, dtype=np.float64)
    ls = np.asarray(loser_sigma, dtype=np.float64)
    if wm.ndim != 2 or lm.ndim != 2 or wm.shape != ws.shape or lm.shape != ls.shape or len(wm) != len(lm):
        raise RatingInputError("batch arrays must be (matches, team size), winners and losers alike")
    if wm.shape[1] == 0 or lm.shape[1] == 0:
        raise RatingInputError("a team is empty")
    for name, values in (("mu", wm), ("mu", lm)):
        if not np.isfinite(values).all():
            raise RatingInputError(f"{name} must be finite")
    for values in (ws, ls):
        if not ((values > 0.0) & np.isfinite(values)).all():
            raise RatingInputError("sigma must be positive and finite")
    tau2 = tau * tau
    beta2 = beta * beta
    wv = ws * ws + tau2
    lv = ls * ls + tau2
    mean = team_sums(wm) - team_sums(lm)
    var = team_sums(wv + beta2) + team_sums(lv + beta2)
    c = np.sqrt(var)
    margin = draw_margin(draw_probability, math.sqrt(wm.shape[1] + lm.shape[1]) * beta)
    if drawn is None or not np.any(drawn):
        v, w, rest = win_array((mean - margin) / c)
    else:
        drawn = np.asarray(drawn, dtype=bool)
        if drawn.shape != mean.shape:
            raise RatingInputError("drawn must have one entry per match")
        if margin <= 0.0:
            raise RatingInputError(TIE_WITHOUT_DRAWS)
        v, w, rest = win_array((mean - margin) / c)
        if drawn.any():
            index = np.flatnonzero(drawn)
            dv, dw, drest = draw_array(mean[index] / c[index], margin / c[index])
            v[index], w[index], rest[index] = dv, dw, drest
    shift = (v / c)[:, None]
    keep_w = rest[:, None]
    wratio = wv / var[:, None]
    lratio = lv / var[:, None]
    new_wm = wm + wv * shift
    new_lm = lm - lv * shift
    new_ws = np.sqrt(wv * ((1.0 - wratio) + wratio * keep_w))
    new_ls = np.sqrt(lv * ((1.0 - lratio) + lratio * keep_w))
    return new_wm, new_ws, new_lm, new_ls


def two_team_quality_batch(
    first_mu: Array, first_sigma: Array, second_mu: Array, second_sigma: Array, beta: float
) -> Array:
    """Seed 000 eq. 7 for many two-team matches of unit weights, one per row.

    `prediction.match_quality` with two teams collapses to
    q = sqrt((N_1 + N_2)/(D_1 + D_2))·exp(−½(m_1 − m_2)²/(D_1 + D_2)), with m_k the team's
    Σ mu, D_k its Σ (sigma² + beta²) and N_k its players·beta²: the path determinants of two
    teams are sums, and the scatter about the weighted centre is the squared gap over D_1 + D_2.
    """
    beta2 = beta * beta
    gap = team_sums(first_mu) - team_sums(second_mu)
    spread = team_sums(first_sigma * first_sigma + beta2) + team_sums(second_sigma * second_sigma + beta2)
    noise = (first_mu.shape[1] + second_mu.shape[1]) * beta2
    quality: Array = np.sqrt(noise / spread) * np.exp(-0.5 * gap * gap / spread)
    return quality
