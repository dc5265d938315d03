"""The standard normal distribution, evaluated stably far into the tails.

TrueSkill's update (seed 000, Table 1 and §3) divides a normal density by a normal
probability. Far in the tails both underflow, which is where trueskill 0.4.5 raises
FloatingPointError and trueskillthroughtime divides by zero. We evaluate the ratio
through the scaled complementary error function erfcx(z) = exp(z²)·erfc(z), which
stays finite for every finite argument, and in the far tail through the continued
fraction of Laplace (Abramowitz & Stegun 7.1.14), which also yields the remainders
needed to compute 1 − W without cancellation.
"""

from __future__ import annotations

import math
from statistics import NormalDist

SQRT2 = math.sqrt(2.0)
SQRT_PI = math.sqrt(math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)

# Beyond this z the continued fraction is used: exp(z*z) would lose ~z² ulps of
# relative precision and overflows for z > 26.6.
CONTINUED_FRACTION_FROM = 4.0

_STANDARD = NormalDist()


def pdf(x: float) -> float:
    """Density of N(0, 1) at x."""
    return INV_SQRT_2PI * math.exp(-0.5 * x * x)


def cdf(x: float) -> float:
    """P(X <= x) for X ~ N(0, 1), accurate in both tails."""
    return 0.5 * math.erfc(-x / SQRT2)


def ppf(p: float) -> float:
    """The inverse of cdf (Wichura's AS241 in the standard library, ~1e-16)."""
    return _STANDARD.inv_cdf(p)


def half_width(p: float) -> float:
    """Φ⁻¹((p + 1)/2): the z with P(|X| <= z) = p (the draw margin of seed 000 §4.1, in betas).

    Taken from the lower tail as −Φ⁻¹((1 − p)/2): for p within an ulp of 1, (p + 1)/2 rounds
    to 1.0 in floating point, where Φ⁻¹ is undefined; (1 − p)/2 stays a positive number.
    """
    return -ppf((1.0 - p) / 2.0)


def draw_margin(p_draw: float, sd: float) -> float:
    """The draw margin eps with P(|d| <= eps) = p_draw for two equal teams, d ~ N(0, sd²)
    (seed 000 §4.1): Φ⁻¹((p_draw + 1)/2)·sd. sd is the performance noise of the two compared
    teams: sqrt(n1 + n2)·beta in TrueSkill, sqrt(Σ beta²) over both teams in seed 001.
    The one home of the formula: TrueSkill's environment, its batch path, `calc_draw_margin`
    and the TrueSkill Through Time history all call it."""
    return 0.0 if p_draw == 0.0 else half_width(p_draw) * sd


def laplace_fractions(z: float) -> tuple[float, float]:
    """Return (K1, K2) of Laplace's continued fraction for z >= CONTINUED_FRACTION_FROM.

    sqrt(pi)·erfcx(z) = 1/(z + K1),  K1 = (1/2)/(z + K2),  K2 = 1/(z + K3),  Kn = (n/2)/(z + Kn+1).
    Evaluated bottom-up with enough terms for double precision at z >= 4.
    """
    terms = 12 + int(160.0 / (z * z))
    k = 0.0
    for n in range(terms, 1, -1):
        k = (0.5 * n) / (z + k)
    k2 = k
    return 0.5 / (z + k2), k2


def erfcx(z: float) -> float:
    """exp(z²)·erfc(z), finite for every finite z >= 0 (and moderate negative z)."""
    if z < CONTINUED_FRACTION_FROM:
        return math.exp(z * z) * math.erfc(z)
    k1, _ = laplace_fractions(z)
    return 1.0 / (SQRT_PI * (z + k1))


def log_cdf(x: float) -> float:
    """log P(X <= x), finite for every finite x."""
    if x > -5.0:
        return math.log(cdf(x))
    z = -x / SQRT2
    return -z * z + math.log(0.5 * erfcx(z))


def log_outcome_probability(mean: float, sd: float, margin: float, tie: bool) -> float:
    """log P(|d| <= margin) for a tie, else log P(d > margin), for d ~ N(mean, sd²); finite
    however unlikely the result (the log-CDF never underflows)."""
    if not tie:
        return log_cdf((mean - margin) / sd)
    lo = (-margin - mean) / sd
    hi = (margin - mean) / sd
    if lo > 0.0:
        # The normal is symmetric: move the window to the lower tail, where log_cdf is exact.
        lo, hi = -hi, -lo
    if hi <= 0.0:
        upper = log_cdf(hi)
        return upper + math.log1p(-math.exp(log_cdf(lo) - upper))
    return math.log(0.5 * (math.erf(hi / SQRT2) - math.erf(lo / SQRT2)))
