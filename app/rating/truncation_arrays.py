"""Seed 000's truncation (Table 1) for many comparisons at once, with NumPy.

NumPy has no erfc, so Φ is evaluated element-wise with math.erfc (the scalar path's
function); the rare far-tail elements (upsets beyond ~5.7 standard deviations, and draws
whose window lies in a tail) are handed to the scalar functions of `truncation`, so the
array and scalar paths agree to rounding. Used by the batch rating of replays and by the
flat TrueSkill Through Time engine.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.rating import normal, truncation
from app.rating.normal import CONTINUED_FRACTION_FROM, INV_SQRT_2PI, SQRT2

Array = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
_FAR = -CONTINUED_FRACTION_FROM * SQRT2


def erfc(values: Array) -> Array:
    return np.fromiter(map(math.erfc, values.tolist()), dtype=np.float64, count=values.size)


def erf(values: Array) -> Array:
    return np.fromiter(map(math.erf, values.tolist()), dtype=np.float64, count=values.size)


def win(x: Array) -> tuple[Array, Array, Array]:
    """V, W and 1 − W of truncation.win(x, 0) for every element."""
    safe = x > _FAR
    xs = np.where(safe, x, 0.0)
    v = 2.0 * INV_SQRT_2PI * np.exp(-0.5 * xs * xs) / erfc(xs * (-1.0 / SQRT2))
    w = v * (v + xs)
    rest = 1.0 - w
    if not safe.all():
        for i in np.flatnonzero(~safe).tolist():
            v[i], w[i], rest[i] = truncation.win(float(x[i]), 0.0)
    return v, w, rest


def draw(t: Array, e: Array) -> tuple[Array, Array, Array]:
    """V, W and 1 − W of truncation.draw(t, e) for every element."""
    sign = np.where(t < 0.0, -1.0, 1.0)
    at = np.abs(t)
    a = -e - at
    b = e - at
    # Narrow windows are integrated by the scalar path's quadrature (Φ(b) − Φ(a) cancels).
    safe = (b > _FAR) & ~((e <= truncation.NARROW_WINDOW) & (e * at <= 20.0))
    a_s = np.where(safe, a, 0.0)
    b_s = np.where(safe, b, 1.0)
    pa = INV_SQRT_2PI * np.exp(-0.5 * a_s * a_s)
    pb = INV_SQRT_2PI * np.exp(-0.5 * b_s * b_s)
    straddles = b_s > 0.0
    by_erf = 0.5 * (erf(b_s / SQRT2) - erf(a_s / SQRT2))
    by_erfc = 0.5 * (erfc(-b_s / SQRT2) - erfc(-a_s / SQRT2))
    z = np.where(straddles, by_erf, by_erfc)
    v = (pa - pb) / z
    w = v * v + (b_s * pb - a_s * pa) / z
    v = sign * v
    rest = 1.0 - w
    if not safe.all():
        for i in np.flatnonzero(~safe).tolist():
            v[i], w[i], rest[i] = truncation.draw(float(t[i]), float(e[i]))
    return v, w, rest


def message(mean: Array, var: Array, margin: Array, tie: Mask) -> tuple[Array, Array]:
    """truncation_message of the TrueSkill Through Time game for every element: the
    truncation factor's message to d ~ N(mean, var), as (precision, precision·mean), flat
    (0, 0) where the factor carries no information."""
    c = np.sqrt(var)
    v, w, rest = win((mean - margin) / c)
    if tie.any():
        index = np.flatnonzero(tie)
        v[index], w[index], rest[index] = draw(mean[index] / c[index], margin[index] / c[index])
    informative = w > 0.0
    denom = np.where(informative, var * rest, 1.0)
    pi = np.where(informative, w / denom, 0.0)
    tau = np.where(informative, (mean * w + c * v) / denom, 0.0)
    return pi, tau


def log_outcome(mean: Array, sd: Array, margin: Array, tie: Mask) -> Array:
    """log P(d > margin), or log P(|d| <= margin) where tie, for d ~ N(mean, sd²): the
    evidence of each comparison, finite however unlikely (as the scalar path)."""
    x = (mean - margin) / sd
    near = x > -5.0
    out = np.log(0.5 * erfc(np.where(near, x, 0.0) * (-1.0 / SQRT2)))
    for i in np.flatnonzero(~near | tie).tolist():
        out[i] = normal.log_outcome_probability(float(mean[i]), float(sd[i]), float(margin[i]), bool(tie[i]))
    return out
