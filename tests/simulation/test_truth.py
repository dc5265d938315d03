"""Outcomes drawn as the rating model says they happen."""

from __future__ import annotations

import math

import numpy as np

from app.simulation.truth import DRAW, FIRST_WINS, SECOND_WINS, ranks, two_team_outcomes

BETA = 25 / 6
COUNT = 200_000


def phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def test_equal_teams_draw_at_the_draw_probability() -> None:
    rng = np.random.default_rng(1)
    outcome = two_team_outcomes(rng, np.zeros(COUNT), np.zeros(COUNT), 4, BETA, 0.1)
    assert abs((outcome == DRAW).mean() - 0.1) < 0.005
    assert abs((outcome == FIRST_WINS).mean() - 0.45) < 0.005


def test_a_stronger_team_wins_as_often_as_the_model_says() -> None:
    rng = np.random.default_rng(2)
    noise = math.sqrt(2) * BETA  # two players' performances
    margin = noise * 1.6448536269514722  # the draw margin of p = 0.9 between equal players
    outcome = two_team_outcomes(rng, np.full(COUNT, 5.0), np.zeros(COUNT), 1, BETA, 0.9)
    assert abs((outcome == FIRST_WINS).mean() - phi((5.0 - margin) / noise)) < 0.005
    assert abs((outcome == SECOND_WINS).mean() - phi((-5.0 - margin) / noise)) < 0.005


def test_without_draws_nobody_ties() -> None:
    outcome = two_team_outcomes(np.random.default_rng(3), np.zeros(1000), np.zeros(1000), 1, BETA, 0.0)
    assert not (outcome == DRAW).any()


def test_teams_far_apart_finish_in_order_of_skill() -> None:
    skills = np.array([[0.0, 300.0, 150.0], [90.0, -90.0, 0.0]])
    assert ranks(np.random.default_rng(4), skills, 2, BETA, 0.1).tolist() == [[3, 1, 2], [1, 3, 2]]


def test_close_teams_tie_in_a_chain() -> None:
    placed = ranks(np.random.default_rng(5), np.zeros((2000, 3)), 1, BETA, 0.999)
    # With a huge draw margin nearly every match is one three-way tie.
    assert (placed == 1).all(axis=1).mean() > 0.95
