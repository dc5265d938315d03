"""Win and draw probabilities: exact for two teams, and consistent with simulation."""

from __future__ import annotations

import math
import random

import pytest

from app.rating import Rating, TrueSkill
from app.rating.normal import cdf

ENV = TrueSkill()


def test_two_team_win_probability_is_the_closed_form() -> None:
    a, b = [Rating(30, 4), Rating(25, 3)], [Rating(28, 6)]
    p0, p1 = ENV.win_probability([a, b])
    c = math.sqrt(4**2 + 3**2 + 6**2 + 3 * ENV.beta**2)
    assert p0 == pytest.approx(cdf((55 - 28) / c), abs=1e-15)
    assert p0 + p1 == pytest.approx(1.0, abs=1e-15)


def test_multi_team_win_probabilities_match_simulation() -> None:
    teams = [[Rating(25, 8)], [Rating(30, 2)], [Rating(20, 5), Rating(5, 3)], [Rating(27, 1)]]
    exact = ENV.win_probability(teams)
    rng = random.Random(3)
    wins = [0] * len(teams)
    draws = 200_000
    for _ in range(draws):
        perf = [sum(rng.gauss(r.mu, math.hypot(r.sigma, ENV.beta)) for r in team) for team in teams]
        wins[perf.index(max(perf))] += 1
    for p, w in zip(exact, wins, strict=True):
        assert p == pytest.approx(w / draws, abs=4 * math.sqrt(p * (1 - p) / draws) + 1e-4)


def test_draw_probability_of_equal_players_matches_the_margin() -> None:
    # With sigma -> 0 the draw probability is the environment's draw probability (seed 000 §4.1).
    tight = [[Rating(25, 1e-9)], [Rating(25, 1e-9)]]
    assert ENV.draw_probability_of(tight) == pytest.approx(0.10, abs=1e-12)
    loose = ENV.draw_probability_of([[Rating()], [Rating()]])
    assert 0.0 < loose < 0.10


def test_quality_of_eight_teams_is_the_matrix_formula() -> None:
    import numpy as np

    teams = [[Rating(20 + 2 * i, 3 + 0.5 * i)] for i in range(8)]
    mu = np.array([t[0].mu for t in teams])
    sigma2 = np.diag([t[0].sigma ** 2 for t in teams])
    a = np.zeros((8, 7))
    for k in range(7):
        a[k, k], a[k + 1, k] = 1.0, -1.0
    b2 = ENV.beta**2
    middle = b2 * a.T @ a + a.T @ sigma2 @ a
    expected = math.sqrt(np.linalg.det(b2 * a.T @ a) / np.linalg.det(middle)) * math.exp(
        -0.5 * mu @ a @ np.linalg.solve(middle, a.T @ mu)
    )
    assert ENV.quality(teams) == pytest.approx(expected, rel=1e-12)
