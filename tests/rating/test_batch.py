"""The vectorised batch path equals the scalar path."""

from __future__ import annotations

import numpy as np
import pytest

from app.rating import Rating, RatingInputError, TrueSkill


def test_batch_equals_scalar_including_draws_and_tails() -> None:
    env = TrueSkill()
    rng = np.random.default_rng(7)
    n = 3000
    wm, lm = rng.uniform(-20, 70, n), rng.uniform(-20, 70, n)
    ws, ls = rng.uniform(0.5, 9, n), rng.uniform(0.5, 9, n)
    wm[:20] = -5000.0  # huge upsets go through the far-tail branch
    drawn = rng.random(n) < 0.3
    drawn[10:20] = True  # and extreme draws
    out = env.rate_1vs1_batch(wm, ws, lm, ls, drawn)
    for i in range(n):
        (a,), (b,) = env.rate(
            [(Rating(wm[i], ws[i]),), (Rating(lm[i], ls[i]),)], ranks=[0, 0] if drawn[i] else [0, 1]
        )
        assert out[0][i] == pytest.approx(a.mu, rel=1e-12, abs=1e-12)
        assert out[1][i] == pytest.approx(a.sigma, rel=1e-12)
        assert out[2][i] == pytest.approx(b.mu, rel=1e-12, abs=1e-12)
        assert out[3][i] == pytest.approx(b.sigma, rel=1e-12)


def test_two_team_batch_equals_scalar_for_doubles() -> None:
    env = TrueSkill()
    rng = np.random.default_rng(8)
    wm, lm = rng.uniform(10, 40, (50, 2)), rng.uniform(10, 40, (50, 2))
    ws, ls = rng.uniform(1, 8, (50, 2)), rng.uniform(1, 8, (50, 2))
    nwm, _, _, nls = env.rate_two_team_batch(wm, ws, lm, ls)
    for i in range(50):
        winners, losers = env.rate(
            [
                [Rating(*p) for p in zip(wm[i], ws[i], strict=True)],
                [Rating(*p) for p in zip(lm[i], ls[i], strict=True)],
            ]
        )
        assert [r.mu for r in winners] == pytest.approx(list(nwm[i]), rel=1e-12)
        assert [r.sigma for r in losers] == pytest.approx(list(nls[i]), rel=1e-12)


def test_batch_rejects_bad_arrays() -> None:
    env = TrueSkill()
    with pytest.raises(RatingInputError, match="sigma must be positive"):
        env.rate_1vs1_batch([25.0], [0.0], [25.0], [8.0])
    with pytest.raises(RatingInputError, match="mu must be finite"):
        env.rate_1vs1_batch([np.nan], [1.0], [25.0], [8.0])
