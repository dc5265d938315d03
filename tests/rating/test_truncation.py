"""V, W and 1 − W on arrays (the batch path's) against the scalar functions, on every branch."""

from __future__ import annotations

import numpy as np
import pytest

from app.rating.truncation import FAR, NARROW_WINDOW, draw, draw_array, win, win_array

# Draw windows (t, e) on every branch of draw: straddling the mean and one-sided, narrow
# (e <= NARROW_WINDOW) with t tiny or not, narrow and far out, quadrature and decimal far
# windows, one-sided far tails, both signs of t and t = 0.
WINDOWS = [
    (t, e)
    for t in (0.0, 1e-12, -1e-12, 1e-5, 0.01, 0.3, -0.3, 1.0, -2.5, 4.0, 5.9, -8.0, 12.0, 40.0, -1e4)
    for e in (1e-9, 1e-4, 5e-3, 0.02, 0.3, 1.0, 2.05, 2.4, 30.0)
]


def test_draw_array_equals_draw_on_every_branch() -> None:
    t = np.array([t for t, _ in WINDOWS])
    e = np.array([e for _, e in WINDOWS])
    assert (e <= NARROW_WINDOW).any() and (e - np.abs(t) <= FAR).any()
    v, w, rest = draw_array(t, e)
    for i, (ti, ei) in enumerate(WINDOWS):
        # NumPy's exp may differ from math.exp in the last digit: a few ulps apart at most.
        assert (v[i], w[i], rest[i]) == pytest.approx(draw(ti, ei), rel=1e-13, abs=1e-300), (ti, ei)


def test_win_array_equals_win_in_the_ordinary_range_and_the_far_tail() -> None:
    x = np.array([-1e4, -40.0, -8.0, FAR - 1e-9, FAR + 1e-9, -3.0, -1.0, 0.0, 1e-3, 2.0, 10.0, 40.0])
    v, w, rest = win_array(x)
    for i, xi in enumerate(x.tolist()):
        assert (v[i], w[i], rest[i]) == pytest.approx(win(xi), rel=1e-13, abs=1e-300), xi
