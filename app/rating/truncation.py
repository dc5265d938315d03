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

from app.rating.normal import (
    CONTINUED_FRACTION_FROM,
    INV_SQRT_2PI,
    SQRT2,
    laplace_fractions,
)

Truncation = tuple[float, float, float]


def win(t: float, e: float) -> Truncation:
    """V, W and 1 − W for a win: d > margin.

    With x = t − e, V = φ(x)/Φ(x) (the inverse Mills ratio of −x) and W = V·(V + x).
    """
    x = t - e
    if x > -CONTINUED_FRACTION_FROM * SQRT2:
        phi = INV_SQRT_2PI * math.exp(-0.5 * x * x)
        big_phi = 0.5 * math.erfc(-x / SQRT2)
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
    if b > -CONTINUED_FRACTION_FROM * SQRT2:
        return INV_SQRT_2PI * math.exp(-0.5 * b * b) / (0.5 * math.erfc(-b / SQRT2))
    z = -b / SQRT2
    k1, _ = laplace_fractions(z)
    return SQRT2 * (z + k1)


def draw(t: float, e: float) -> Truncation:
    """V, W and 1 − W for a draw: |d| <= margin.

    The truncated standard normal lives on [a, b] = [−e − |t|, e − |t|]; V takes the
    sign of t. Far in the tail every term is scaled by Φ(b) so nothing underflows.
    """
    sign = -1.0 if t < 0.0 else 1.0
    t = abs(t)
    a = -e - t
    b = e - t
    if b > -CONTINUED_FRACTION_FROM * SQRT2:
        pa = INV_SQRT_2PI * math.exp(-0.5 * a * a)
        pb = INV_SQRT_2PI * math.exp(-0.5 * b * b)
        if b > 0.0:
            # The window straddles the mean: erf keeps full precision near zero.
            z = 0.5 * (math.erf(b / SQRT2) - math.erf(a / SQRT2))
        else:
            z = 0.5 * (math.erfc(-b / SQRT2) - math.erfc(-a / SQRT2))
        v = (pa - pb) / z
        w = v * v + (b * pb - a * pa) / z
        return sign * v, w, 1.0 - w
    # Far tail: divide numerator and denominator by Φ(b). With r = φ(a)/φ(b) = e^(−2et)
    # and λa, λb the Mills ratios, Φ(a)/Φ(b) = r·λb/λa.
    lam_b = _mills(b)
    r = math.exp(-2.0 * e * t)
    if r < 1e-18:
        # The far edge is beyond double precision: a one-sided truncation at b.
        v_one, w_one, rest = win(b, 0.0)
        return -sign * v_one, w_one, rest
    lam_a = _mills(a)
    denom = 1.0 - r * lam_b / lam_a
    v = lam_b * (r - 1.0) / denom
    w = v * v + lam_b * (b - a * r) / denom
    rest = 1.0 - w
    if rest <= 0.0:
        # The window is narrower than double precision resolves (e·t tiny, far tail);
        # its variance is then (b − a)²/12, the uniform limit.
        rest = min(1.0, (b - a) ** 2 / 12.0)
        w = 1.0 - rest
    return sign * v, w, rest
