"""The truncation factor of TrueSkill's graph: the V and W functions (seed 000 Table 1).

A performance difference d ~ N(mean, c²) is observed to exceed the draw margin eps (a
win) or to lie within it (a draw). With t = mean/c and e = eps/c, the moment-matched
posterior of d is

    new mean     = mean + c·V(t, e)
    new variance = c²·(1 − W(t, e))

(seed 000 eq. 2 and §3.2). Every function returns (V, W, 1 − W). The last comes
separately because in a large upset W → 1, and 1 − W by subtraction would lose every
digit.

Each formula is written once. The ordinary range is a function of plain expressions
(`_win_moments`, `_window_moments`) that works on floats and on NumPy arrays alike; the
scalar functions `win` and `draw` apply it to one number, `win_array` and `draw_array`
to whole arrays, and both hand the far tails to the same scalar tail code. The TrueSkill
Through Time kernel (app/rating/history/kernel.py) compiles `win` and `draw` themselves
with numba, which leaves them plain Python functions here.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from math import erf, erfc, exp
from typing import Any

import numpy as np
import numpy.typing as npt

from app.rating.normal import CONTINUED_FRACTION_FROM, INV_SQRT_2PI, SQRT2, laplace_fractions

Truncation = tuple[float, float, float]
Array = npt.NDArray[np.float64]

# Draw windows narrower than this (in standard deviations) are integrated by quadrature.
NARROW_WINDOW = 1e-2
# Far in the tail, windows up to this half-width are integrated by quadrature too.
QUADRATURE_WINDOW = 2.0
# A tuple: compiled code (app/rating/history/kernel.py) reads it as a constant.
_LEGENDRE = tuple((float(x), float(w)) for x, w in zip(*np.polynomial.legendre.leggauss(32), strict=True))
# Below this x the ratio φ(x)/Φ(x) loses digits and Laplace's continued fraction takes over.
FAR = -CONTINUED_FRACTION_FROM * SQRT2
_TWO_INV_SQRT_2PI = 2.0 * INV_SQRT_2PI
_MINUS_INV_SQRT2 = -1.0 / SQRT2


def _win_moments(x: Any, exp: Any, erfc: Any) -> tuple[Any, Any, Any]:
    """V, W and 1 − W of a win for x = t − e > FAR: V = φ(x)/Φ(x), W = V·(V + x).

    Φ(x) = erfc(−x/√2)/2. `exp` and `erfc` are math's for a float, NumPy's for an array."""
    v = _TWO_INV_SQRT_2PI * exp(-0.5 * x * x) / erfc(x * _MINUS_INV_SQRT2)
    w = v * (v + x)
    return v, w, 1.0 - w


def _window_moments(a: Any, b: Any, mass: Any, exp: Any) -> tuple[Any, Any, Any]:
    """V (for t >= 0), W and 1 − W of a draw: N(0, 1) truncated to [a, b] = [−e − t, e − t],
    whose probability is `mass`:

        V = (φ(a) − φ(b))/mass,   W = V² + (b·φ(b) − a·φ(a))/mass.
    """
    pa = INV_SQRT_2PI * exp(-0.5 * a * a)
    pb = INV_SQRT_2PI * exp(-0.5 * b * b)
    v = (pa - pb) / mass
    w = v * v + (b * pb - a * pa) / mass
    return v, w, 1.0 - w


def win(t: float, e: float = 0.0) -> Truncation:
    """V, W and 1 − W for a win: d > margin, x = t − e."""
    x = t - e
    if x > FAR:
        return _win_moments(x, exp, erfc)
    # Far tail (an upset): with z = −x/√2, V = √2·(z + K1), V + x = √2·K1,
    # so W = 2·K1·(z + K1) and 1 − W = (K2 − K1)/(z + K2), all without cancellation.
    z = -x / SQRT2
    k1, k2 = laplace_fractions(z)
    return SQRT2 * (z + k1), 2.0 * k1 * (z + k1), (k2 - k1) / (z + k2)


def draw(t: float, e: float) -> Truncation:
    """V, W and 1 − W for a draw: |d| <= margin.

    The truncated standard normal lives on [a, b] = [−e − |t|, e − |t|]; V takes the
    sign of t. Far in the tail every term is scaled by Φ(b) so nothing underflows.
    """
    if t < 0.0:
        sign = -1.0
        t = -t
    else:
        sign = 1.0
    # The closed form keeps its digits unless the window is narrow (Φ(b) − Φ(a) cancels)
    # or far in the tail; draw_array makes the same choice.
    if e - t > FAR and not (e <= NARROW_WINDOW and e * t <= 20.0):
        a = -e - t
        b = e - t
        if b > 0.0:
            # The window straddles the mean: erf keeps full precision near zero.
            mass = 0.5 * (erf(b / SQRT2) - erf(a / SQRT2))
        else:
            mass = 0.5 * (erfc(-b / SQRT2) - erfc(-a / SQRT2))
        v, w, rest = _window_moments(a, b, mass, exp)
        return sign * v, w, rest
    if e <= NARROW_WINDOW and e * t <= 20.0:
        v, rest = _narrow_window(t, e)
        return sign * v, 1.0 - rest, rest
    # Far tail: the window lies many standard deviations out. Its moments are differences
    # of nearly equal terms (the variance is ~1/b² while the terms are ~b²), so they are
    # integrated directly, or evaluated in extended precision for wide windows.
    if math.exp(-2.0 * e * t) < 1e-18:
        # The far edge is beyond double precision: a one-sided truncation at b.
        v_one, w_one, rest = win(e - t)
        return -sign * v_one, w_one, rest
    # Up to QUADRATURE_WINDOW wide (e·t <= ~20 here) the Gauss–Legendre rule stays within
    # ~3e-13 of the decimals (tests/rating/test_robustness.py) at a hundredth of their cost.
    v, rest = _narrow_window(t, e) if e <= QUADRATURE_WINDOW else _far_window(t, e)
    return sign * v, 1.0 - rest, rest


def win_array(x: Array) -> tuple[Array, Array, Array]:
    """win(x) for every element: the ordinary range at once, the far tail element-wise."""
    regular = x > FAR
    v, w, rest = _win_moments(np.where(regular, x, 0.0), np.exp, erfc_array)
    for i in np.flatnonzero(~regular).tolist():
        v[i], w[i], rest[i] = win(float(x[i]))
    return v, w, rest


def draw_array(t: Array, e: Array) -> tuple[Array, Array, Array]:
    """draw(t, e) for every element: regular windows at once, the rest element-wise."""
    at = np.abs(t)
    regular = (e - at > FAR) & ~((e <= NARROW_WINDOW) & (e * at <= 20.0))
    a = np.where(regular, -e - at, 0.0)
    b = np.where(regular, e - at, 1.0)
    # draw's choice between erf and erfc, made for every element.
    mass = np.where(
        b > 0.0,
        0.5 * (erf_array(b / SQRT2) - erf_array(a / SQRT2)),
        0.5 * (erfc_array(-b / SQRT2) - erfc_array(-a / SQRT2)),
    )
    v, w, rest = _window_moments(a, b, mass, np.exp)
    v = np.where(t < 0.0, -v, v)
    for i in np.flatnonzero(~regular).tolist():
        v[i], w[i], rest[i] = draw(float(t[i]), float(e[i]))
    return v, w, rest


def erfc_array(values: Array) -> Array:
    """math.erfc element-wise (NumPy has none; the scalar path's own function)."""
    return np.fromiter(map(erfc, values.tolist()), dtype=np.float64, count=values.size)


def erf_array(values: Array) -> Array:
    return np.fromiter(map(erf, values.tolist()), dtype=np.float64, count=values.size)


def _narrow_window(t: float, e: float) -> tuple[float, float]:
    """Mean and variance of N(0, 1) truncated to the window [−e − t, e − t], for narrow
    windows anywhere and windows up to QUADRATURE_WINDOW wide in the far tail.

    With y = −t + s, the density on s ∈ [−e, e] is ∝ exp(t·s − s²/2), an entire function
    the Gauss–Legendre rule integrates to rounding; the moments of s then come without
    the cancellation that Φ(b) − Φ(a) suffers when the window is narrow.
    """
    zeroth = first = second = 0.0
    for node, weight in _LEGENDRE:
        s = e * node
        f = weight * exp(t * (s - e) - 0.5 * s * s)
        zeroth += f
        first += f * s
        second += f * s * s
    mean = first / zeroth
    return mean - t, second / zeroth - mean * mean


def _far_window(t: float, e: float) -> tuple[float, float]:
    """Mean and variance of N(0, 1) truncated to [a, b] = [−e − t, e − t], b << 0, in decimals.

    Dividing by φ(b): with r = φ(a)/φ(b) = exp(−2et) and R(x) = Φ(x)/φ(x) (the
    reciprocal Mills ratio, from Laplace's continued fraction), D = R(b) − r·R(a) and
        mean = (r − 1)/D,   E[y²] = 1 + (a·r − b)/D.
    The bounds are formed in decimal too: rounding them to doubles would blur a narrow window.
    """
    digits = 40 + 4 * max(1, int(math.log10(t + e)))
    with localcontext() as ctx:
        ctx.prec = digits
        big_t, big_e = Decimal(t), Decimal(e)
        big_a, big_b = -big_e - big_t, big_e - big_t
        r = (-2 * big_e * big_t).exp()
        d = _decimal_reciprocal_mills(big_b, digits) - r * _decimal_reciprocal_mills(big_a, digits)
        mean = (r - 1) / d
        variance = 1 + (big_a * r - big_b) / d - mean * mean
        return float(mean), float(variance)


def _decimal_reciprocal_mills(x: Decimal, digits: int) -> Decimal:
    """Φ(x)/φ(x) for x << 0: 1/(√2·f), f = z + (1/2)/(z + 1/(z + (3/2)/(z + …))), z = −x/√2.

    Modified Lentz evaluation of the continued fraction, to `digits` digits.
    """
    root2 = Decimal(2).sqrt()
    z = -x / root2
    tiny = Decimal(10) ** -(digits + 10)
    tolerance = Decimal(10) ** -(digits - 3)
    f = z
    c = z
    d = Decimal(0)
    n = 1
    while True:
        coefficient = Decimal(n) / 2
        d = z + coefficient * d
        d = 1 / (d if d != 0 else tiny)
        c = z + coefficient / c
        if c == 0:
            c = tiny
        delta = c * d
        f *= delta
        if abs(delta - 1) < tolerance or n > 100_000:
            return 1 / (root2 * f)
        n += 1
