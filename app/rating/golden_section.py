"""Golden-section search for the largest value of a one-dimensional function.

The hyperparameter fits (app.rating.history.tuning, app.evaluation.drift and the Elo fit of
app.evaluation.predictive) each maximise an evidence or a log probability over one parameter
this way: each step keeps the golden ratio's share of the interval around the better of two
inner points and evaluates one new point, so `steps` steps cost `steps + 2` evaluations
(Kiefer 1953; Press et al., Numerical Recipes, 3rd ed., §10.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

Trial = TypeVar("Trial")

RATIO = (math.sqrt(5.0) - 1.0) / 2.0


def golden_section_max(
    at: Callable[[float], Trial], low: float, high: float, steps: int, score: Callable[[Trial], float]
) -> Trial:
    """The trial with the largest `score` among those `at` gave for the points the search
    visited over [low, high] in `steps` steps (at least 0); a tie keeps the lower point's side."""
    if steps < 0:
        raise ValueError(f"steps must be at least 0, not {steps}")
    a, b = low, high
    c, d = b - RATIO * (b - a), a + RATIO * (b - a)
    fc, fd = at(c), at(d)
    best = max(fc, fd, key=score)
    for _ in range(steps):
        if score(fc) >= score(fd):
            b, d, fd = d, c, fc
            c = b - RATIO * (b - a)
            fc = at(c)
        else:
            a, c, fc = c, d, fd
            d = a + RATIO * (b - a)
            fd = at(d)
        best = max(best, fc, fd, key=score)
    return best
