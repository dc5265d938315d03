"""Many independent two-team matches at once, with NumPy (for replays and imports).

The same closed form as `inference.two_teams`, one array element per match. NumPy has
no erfc, so Φ is evaluated element-wise with math.erfc (the scalar path's function);
the rare far-tail elements (upsets beyond ~5.7 standard deviations, and draws whose
window lies in a tail) are handed to the scalar truncation functions, so both paths
agree to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.rating import truncation
from app.rating.errors import RatingInputError
from app.rating.normal import CONTINUED_FRACTION_FROM, INV_SQRT_2PI, SQRT2

Array = npt.NDArray[np.float64]
_FAR = -CONTINUED_FRACTION_FROM * SQRT2


def _erfc(values: Array) -> Array:
    return np.fromiter(map(math.erfc, values.tolist()), dtype=np.float64, count=values.size)


def _erf(values: Array) -> Array:
    return np.fromiter(map(math.erf, values.tolist()), dtype=np.float64, count=values.size)


def _win(x: Array) -> tuple[Array, Array, Array]:
    """V, W and 1 − W of truncation.win(x, 0) for every element."""
    safe = x > _FAR
    xs = np.where(safe, x, 0.0)
    v = 2.0 * INV_SQRT_2PI * np.exp(-0.5 * xs * xs) / _erfc(xs * (-1.0 / SQRT2))
    w = v * (v + xs)
    rest = 1.0 - w
    if not safe.all():
        for i in np.flatnonzero(~safe).tolist():
            v[i], w[i], rest[i] = truncation.win(float(x[i]), 0.0)
    return v, w, rest


def _draw(t: Array, e: Array) -> tuple[Array, Array, Array]:
    """V, W and 1 − W of truncation.draw(t, e) for every element."""
    sign = np.where(t < 0.0, -1.0, 1.0)
    at = np.abs(t)
    a = -e - at
    b = e - at
    safe = b > _FAR
    a_s = np.where(safe, a, 0.0)
    b_s = np.where(safe, b, 1.0)
    pa = INV_SQRT_2PI * np.exp(-0.5 * a_s * a_s)
    pb = INV_SQRT_2PI * np.exp(-0.5 * b_s * b_s)
    straddles = b_s > 0.0
    by_erf = 0.5 * (_erf(b_s / SQRT2) - _erf(a_s / SQRT2))
    by_erfc = 0.5 * (_erfc(-b_s / SQRT2) - _erfc(-a_s / SQRT2))
    z = np.where(straddles, by_erf, by_erfc)
    v = (pa - pb) / z
    w = v * v + (b_s * pb - a_s * pa) / z
    v = sign * v
    rest = 1.0 - w
    if not safe.all():
        for i in np.flatnonzero(~safe).tolist():
            v[i], w[i], rest[i] = truncation.draw(float(t[i]), float(e[i]))
    return v, w, rest


def rate_two_team_batch(
    winner_mu: Array,
    winner_sigma: Array,
    loser_mu: Array,
    loser_sigma: Array,
    drawn: npt.NDArray[np.bool_] | None,
    beta: float,
    tau: float,
    draw_z: float,
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
    mean = wm.sum(axis=1) - lm.sum(axis=1)
    var = (wv + beta2).sum(axis=1) + (lv + beta2).sum(axis=1)
    c = np.sqrt(var)
    margin = draw_z * math.sqrt(wm.shape[1] + lm.shape[1]) * beta
    if drawn is None or not np.any(drawn):
        v, w, rest = _win((mean - margin) / c)
    else:
        drawn = np.asarray(drawn, dtype=bool)
        if drawn.shape != mean.shape:
            raise RatingInputError("drawn must have one entry per match")
        if margin <= 0.0:
            raise RatingInputError("a tie cannot be rated when draw_probability is 0")
        v, w, rest = _win((mean - margin) / c)
        if drawn.any():
            index = np.flatnonzero(drawn)
            dv, dw, drest = _draw(mean[index] / c[index], margin / c[index])
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
