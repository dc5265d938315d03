"""The truncation factor's message and evidence for many comparisons at once, with NumPy.

Used by the flat TrueSkill Through Time engine (app/rating/history). V and W come from
`truncation.win_array` and `truncation.draw_array`, the vectorised form of the scalar
formulas.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from app.rating import normal
from app.rating.normal import SQRT2
from app.rating.truncation import Array, draw_array, erfc_array, win_array

Mask = npt.NDArray[np.bool_]
__all__ = ["Array", "Mask", "log_outcome", "message"]


def message(mean: Array, var: Array, margin: Array, tie: Mask) -> tuple[Array, Array]:
    """The truncation factor's message to d ~ N(mean, var) for every element, as
    (precision, precision·mean), flat (0, 0) where the factor carries no information
    (seed 000 Table 1: the posterior N(mean + c·V, var·(1 − W)) divided by the cavity)."""
    c = np.sqrt(var)
    v, w, rest = win_array((mean - margin) / c)
    if tie.any():
        index = np.flatnonzero(tie)
        v[index], w[index], rest[index] = draw_array(mean[index] / c[index], margin[index] / c[index])
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
    out = np.log(0.5 * erfc_array(np.where(near, x, 0.0) * (-1.0 / SQRT2)))
    for i in np.flatnonzero(~near | tie).tolist():
        out[i] = normal.log_outcome_probability(float(mean[i]), float(sd[i]), float(margin[i]), bool(tie[i]))
    return out
