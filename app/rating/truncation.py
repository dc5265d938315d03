"""The V and W functions of TrueSkill's truncated-Gaussian update (seed 000, Table 1).

For a performance difference d ~ N(mu, c²) that is observed to exceed the draw
margin (a win) or to lie inside it (a draw), with t = mu/c and e = margin/c:

    new mean     = mu + c·V(t, e)
    new variance = c²·(1 − W(t, e))

Every function returns (V, W, 1 − W). The last is returned separately because in a
large upset W → 1 and `1 − W` computed by subtraction would lose every digit.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from math import erf, erfc, exp

import numpy as np

from app.rating.normal import (
    CONTINUED_FRACTION_FROM,
    INV_SQRT_2PI,
    SQRT2,
    laplace_fractions,
)

Truncation = tuple[float, float, float]

# Draw windows narrower than this (in standard deviations) are integrated by quadrature.
NARROW_WINDOW = 1e-2
# Far in the tail, windows up to this half-width are integrated by quadrature too.
QUADRATURE_WINDOW = 2.0
_LEGENDRE = [(float(x), float(w)) for x, w in zip(*np.polynomial.legendre.leggauss(32), strict=True)]
# Below this x = t − e the direct ratios lose digits and the continued fraction takes over.
_FAR = -CONTINUED_FRACTION_FROM * SQRT2


def win(t: float, e: float) -> Truncation:
    """V, W and 1 − W for a win: d > margin.

    With x = t − e, V = φ(x)/Φ(x) (the inverse Mills ratio of −x) and W = V·(V + x).
    """
    x = t - e
    if x > _FAR:
        phi = INV_SQRT_2PI * exp(-0.5 * x * x)
        big_phi = 0.5 * erfc(-x / SQRT2)
        v = phi / big_phi
        w = v * (v + x)
        return v, w, 1.0 - w
    # Far tail (an upset): with z = −x/√2, V = √2·(z + K1), V + x = √2·K1,
    # so W = 2·K1·(z + K1) and 1 − W = (K2 − K1)/(z + K2), all without cancellation.
    z = -x / SQRT2
    k1, k2 = laplace_fractions(z)
    return SQRT2 * (z + k1), 2.0 * k1 * (z + k1), (k2 - k1) / (z + k2)


def _mills(b: float) -> float:
    """φ(b)/Φ(b), finite for every finite b."""
    if b > _FAR:
        return INV_SQRT_2PI * exp(-0.5 * b * b) / (0.5 * erfc(-b / SQRT2))
    z = -b / SQRT2
    k1, _ = laplace_fractions(z)
    return SQRT2 * (z + k1)


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
    if e <= NARROW_WINDOW and e * t <= 20.0:
        v, rest = _narrow_window(t, e)
        return sign * v, 1.0 - rest, rest
    a = -e - t
    b = e - t
    if b > _FAR:
        pa = INV_SQRT_2PI * exp(-0.5 * a * a)
        pb = INV_SQRT_2PI * exp(-0.5 * b * b)
        if b > 0.0:
            # The window straddles the mean: erf keeps full precision near zero.
            z = 0.5 * (erf(b / SQRT2) - erf(a / SQRT2))
        else:
            z = 0.5 * (erfc(-b / SQRT2) - erfc(-a / SQRT2))
        v = (pa - pb) / z
        w = v * v + (b * pb - a * pa) / z
        return sign * v, w, 1.0 - w
    # Far tail: the window lies many standard deviations out. Its moments are differences
    # of nearly equal terms (the variance is ~1/b² while the terms are ~b²), so they are
    # integrated directly, or evaluated in extended precision for wide windows.
    r = math.exp(-2.0 * e * t)
    if r < 1e-18:
        # The far edge is beyond double precision: a one-sided truncation at b.
        v_one, w_one, rest = win(b, 0.0)
        return -sign * v_one, w_one, rest
    # Up to QUADRATURE_WINDOW wide (e·t <= ~20 here, as r >= 1e-18) the Gauss–Legendre rule
    # stays within ~3e-13 of the decimals (tests/rating/test_robustness.py) at a hundredth of
    # their cost; big tournaments full of ties land here often.
    v, rest = _narrow_window(t, e) if e <= QUADRATURE_WINDOW else _far_window(t, e)
    return sign * v, 1.0 - rest, rest


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
