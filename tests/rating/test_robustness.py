"""Finite, correct results on every finite input, checked against 120-digit mpmath."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from app.rating import Rating, TrueSkill
from app.rating.truncation import draw, win

ENV = TrueSkill()


def exact_two_player(
    winner: tuple[float, float],
    loser: tuple[float, float],
    drawn: bool = False,
) -> list[tuple[float, float]]:
    """The closed form of seed 000 §3 for 1v1, evaluated with 120 significant digits."""
    with mp.workdps(120):
        beta, tau = mp.mpf(25) / 6, mp.mpf(25) / 300
        (m1, s1), (m2, s2) = [(mp.mpf(m), mp.mpf(s)) for m, s in (winner, loser)]
        v1, v2 = s1**2 + tau**2, s2**2 + tau**2
        c2 = v1 + v2 + 2 * beta**2
        c = mp.sqrt(c2)
        eps = mp.sqrt(2) * mp.erfinv(mp.mpf("0.1")) * mp.sqrt(2) * beta
        t, e = (m1 - m2) / c, eps / c
        if drawn:
            # Symmetric form: put the window in the lower tail, where Φ has digits to spare.
            sign = -1 if t < 0 else 1
            a, b = -e - abs(t), e - abs(t)
            z = (mp.erfc(-b / mp.sqrt(2)) - mp.erfc(-a / mp.sqrt(2))) / 2
            v = sign * (mp.npdf(a) - mp.npdf(b)) / z
            w = v**2 + (b * mp.npdf(b) - a * mp.npdf(a)) / z
        else:
            x = t - e
            v = mp.npdf(x) / (mp.erfc(-x / mp.sqrt(2)) / 2)
            w = v * (v + x)
        return [
            (float(m1 + v1 / c * v), float(mp.sqrt(v1 * (1 - v1 / c2 * w)))),
            (float(m2 - v2 / c * v), float(mp.sqrt(v2 * (1 - v2 / c2 * w)))),
        ]


UPSETS = [
    ((-323.263, 2.965), (-48.441, 2.19)),  # sublee issue #5
    ((25.0, 25 / 3), (1000.0, 25 / 3)),
    ((0.0, 25 / 3), (1000 * 25 / 3, 25 / 3)),  # the winner 1,000 sigma below the loser
    ((25.0, 25 / 3), (1e6, 25 / 3)),
    ((25.0, 25 / 3), (1e12, 25 / 3)),
    ((25.0, 1e-6), (1e4, 1e-6)),
]


@pytest.mark.parametrize(("winner", "loser"), UPSETS)
def test_upsets_match_the_exact_answer(winner: tuple[float, float], loser: tuple[float, float]) -> None:
    (a,), (b,) = ENV.rate([(Rating(*winner),), (Rating(*loser),)])
    for got, (mu, sigma) in zip((a, b), exact_two_player(winner, loser), strict=True):
        assert math.isfinite(got.mu) and got.sigma > 0
        assert got.mu == pytest.approx(mu, rel=1e-10, abs=1e-9)
        assert got.sigma == pytest.approx(sigma, rel=1e-9)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((25.0, 8.0), (50.0, 12.5)),
        ((25.0, 8.0), (400.0, 3.0)),
        ((0.0, 2.0), (-300.0, 5.0)),
        ((1.0, 1e-6), (2.0, 1e-6)),
    ],
)
def test_extreme_draws_match_the_exact_answer(
    first: tuple[float, float], second: tuple[float, float]
) -> None:
    (a,), (b,) = ENV.rate([(Rating(*first),), (Rating(*second),)], ranks=[0, 0])
    for got, (mu, sigma) in zip((a, b), exact_two_player(first, second, drawn=True), strict=True):
        assert got.mu == pytest.approx(mu, rel=1e-9, abs=1e-9)
        assert got.sigma == pytest.approx(sigma, rel=1e-7)


def reference_draw_moments(t: float, e: float) -> tuple[float, float]:
    """Mean and variance of N(0, 1) truncated to [−e − t, e − t], to 200 digits."""
    with mp.workdps(200):
        big_t, big_e = mp.mpf(t), mp.mpf(e)
        a, b = -big_e - big_t, big_e - big_t
        z = (mp.erfc(-b / mp.sqrt(2)) - mp.erfc(-a / mp.sqrt(2))) / 2
        mean = (mp.npdf(a) - mp.npdf(b)) / z
        variance = 1 + (a * mp.npdf(a) - b * mp.npdf(b)) / z - mean**2
        return float(mean), float(variance)


@pytest.mark.parametrize(
    ("t", "e"),
    [
        (36, 0.1),
        (1e4, 1e-12),
        (1e4, 0.05),
        (1e12, 1e-12),
        (40, 30),
        (6.5, 1e-6),
        (5.0, 1e-9),
        (2.0, 1e-7),
        (0.5, 0.01),
        (3.0, 0.008),
    ],
)
def test_draw_moments_match_200_digit_reference(t: float, e: float) -> None:
    mean, variance = reference_draw_moments(t, e)
    v, w, rest = draw(t, e)
    assert v == pytest.approx(float(mean), rel=1e-12)
    assert rest == pytest.approx(float(variance), rel=1e-6)
    assert w == pytest.approx(1.0 - float(variance), rel=1e-12)


def test_out_of_domain_values_are_refused() -> None:
    with pytest.raises(ValueError, match="mu must be within"):
        Rating(1e300, 1)
    with pytest.raises(ValueError, match="sigma must be in"):
        Rating(0, 1e-300)
    with pytest.raises(ValueError, match="beta must be in"):
        TrueSkill(beta=1e-300)


def test_draws_far_beyond_double_precision_stay_finite() -> None:
    (a,), (b,) = ENV.rate([(Rating(25, 8),), (Rating(1e12, 3),)], ranks=[0, 0])
    assert all(math.isfinite(x) for x in (a.mu, a.sigma, b.mu, b.sigma))
    assert a.mu > 25 and b.mu < 1e12 and 0 < a.sigma < 8 and 0 < b.sigma < 3


def test_truncation_functions_are_finite_everywhere() -> None:
    # |t| is bounded by the domain: |Δmu| <= 2e15 over c >= sqrt(2)·beta >= 1.4e-9.
    for t in (-1e25, -1e12, -1e4, -40.0, -6.0, -1.0, 0.0, 1.0, 6.0, 40.0, 1e4, 1e25):
        for e in (0.0, 1e-12, 0.05, 1.0, 30.0):
            v, w, rest = win(t, e)
            assert all(math.isfinite(x) for x in (v, w, rest)), (t, e)
            assert 0.0 <= w <= 1.0 and 0.0 <= rest <= 1.0
            if e > 0:
                v, w, rest = draw(t, e)
                assert all(math.isfinite(x) for x in (v, w, rest)), (t, e)
                assert 0.0 < rest <= 1.0


def test_hundreds_of_teams() -> None:
    teams = [[Rating(25 + (i % 17) - 8, 3 + (i % 5))] for i in range(300)]
    ranks = [i // 3 for i in range(300)]  # groups of three tie
    result = ENV.rate(teams, ranks)
    assert len(result) == 300
    for before, (after,) in zip(teams, result, strict=True):
        assert math.isfinite(after.mu) and 0 < after.sigma <= math.hypot(before[0].sigma, ENV.tau)
    # The winner gains and the last team loses.
    assert result[0][0].mu > teams[0][0].mu
    assert result[-1][0].mu < teams[-1][0].mu


def test_sigma_down_to_one_millionth() -> None:
    env = TrueSkill(tau=0.0)
    (a,), (b,), (c,) = env.rate([(Rating(30, 1e-6),), (Rating(20, 1e-6),), (Rating(25, 1e-6),)])
    for r in (a, b, c):
        assert math.isfinite(r.mu) and 0 < r.sigma <= 1e-6


@pytest.mark.parametrize(
    ("t", "e"), [(5.7, 0.012), (6.5, 0.3), (8.0, 1.9), (10.6, 0.07), (12.0, 0.8), (40.0, 0.5)]
)
def test_far_windows_by_quadrature_match_200_digit_reference(t: float, e: float) -> None:
    """The far-tail windows big tournaments produce, integrated in doubles."""
    mean, variance = reference_draw_moments(t, e)
    v, _, rest = draw(t, e)
    assert v == pytest.approx(float(mean), rel=1e-14)
    assert rest == pytest.approx(float(variance), rel=1e-12)


@pytest.mark.parametrize(("t", "e"), [(7.8, 2.05), (8.0, 2.2), (9.0, 2.3), (10.0, 2.05), (-8.5, 2.4)])
def test_wide_far_windows_by_decimals_match_200_digit_reference(t: float, e: float) -> None:
    """Windows wider than the quadrature's, 5.7 to 8 standard deviations out, with the far
    edge still within double range: truncation._far_window's extended precision. V flips with
    the sign of t, and W is 1 − (the variance)."""
    mean, variance = reference_draw_moments(abs(t), e)
    v, w, rest = draw(t, e)
    # Extended precision throughout: the double result is the reference rounded.
    assert v == pytest.approx(mean if t > 0 else -mean, rel=1e-15)
    assert rest == pytest.approx(variance, rel=1e-15)
    assert w == pytest.approx(1.0 - variance, rel=1e-15)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.999, 1 - 2**-40, 0.9999999999999999])
def test_draw_margin_holds_for_draw_probabilities_up_to_the_last_float_below_one(p: float) -> None:
    # Φ⁻¹((p + 1)/2) from 60-digit mpmath; (p + 1)/2 itself rounds to 1.0 in doubles for the last p.
    mp.mp.dps = 60
    exact = float(mp.sqrt(2) * mp.erfinv(mp.mpf(p)))
    env = TrueSkill(draw_probability=p)
    assert env.draw_z == pytest.approx(exact, rel=1e-14)
    (a,), (b,) = env.rate([(Rating(25, 8),), (Rating(20, 6),)], ranks=[0, 0])
    assert all(math.isfinite(v) for v in (a.mu, a.sigma, b.mu, b.sigma))
