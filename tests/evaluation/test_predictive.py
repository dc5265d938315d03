"""The predictive comparison of seed 001 §3.9: Elo's update, no peeking at the day predicted,
and the table's arithmetic."""

from __future__ import annotations

import math
import random

import pytest

from app.evaluation import histories, predictive
from app.rating import normal
from tests.conftest import DATASETS

SETTINGS = predictive.Parameters(sigma=1.6, gamma=0.036, p_draw=0.2)


def synthetic(days: int = 60, seed: int = 0) -> histories.MatchHistory:
    """Players of fixed true skill, a few games a day, draws when performances are close."""
    rng = random.Random(seed)
    skills = {f"p{i}": rng.gauss(0.0, 1.5) for i in range(12)}
    out = histories.MatchHistory("synthetic", [], [], [])
    for day in range(days):
        for _ in range(3):
            a, b = rng.sample(sorted(skills), 2)
            d = rng.gauss(skills[a], 1.0) - rng.gauss(skills[b], 1.0)
            result = [0.0, 0.0] if abs(d) < 0.3 else ([1.0, 0.0] if d > 0 else [0.0, 1.0])
            out.composition.append([[a], [b]])
            out.results.append(result)
            out.times.append(float(day))
    return out


def test_elo_moves_by_the_seeds_delta() -> None:
    """Seed 000 §1: Δ = αβ√π·((y + 1)/2 − Φ((s1 − s2)/(√2β))), winner up, loser down."""
    ratings = {"a": 0.5, "b": -0.25}
    k = predictive.ELO_ALPHA * math.sqrt(math.pi)
    expected = k * (1.0 - normal.cdf(0.75 / math.sqrt(2.0)))
    predictive._elo_update(ratings, [["a"], ["b"]], [1.0, 0.0], k, math.sqrt(2.0), 0.0)
    assert ratings["a"] == pytest.approx(0.5 + expected, abs=1e-15)
    assert ratings["b"] == pytest.approx(-0.25 - expected, abs=1e-15)
    draw = {"a": 0.0, "b": 0.0}
    predictive._elo_update(draw, [["a"], ["b"]], [0.0, 0.0], k, math.sqrt(2.0), 0.0)
    assert draw == {"a": 0.0, "b": 0.0}


def test_elo_duels_every_opponent_and_averages_for_teams() -> None:
    ratings = {"a": 1.0, "b": 0.0, "c": -1.0}
    k = 0.1
    before = dict(ratings)
    predictive._elo_update(ratings, [["a", "b"], ["c"]], [1.0, 0.0], k, 1.0, 0.0)
    assert ratings["a"] == pytest.approx(before["a"] + k * (1.0 - normal.cdf(2.0)))
    assert ratings["b"] == pytest.approx(before["b"] + k * (1.0 - normal.cdf(1.0)))
    down = [-k * (1.0 - normal.cdf(2.0)), -k * (1.0 - normal.cdf(1.0))]
    assert ratings["c"] == pytest.approx(before["c"] + sum(down) / 2)


@pytest.mark.parametrize("smooth", [False, True])
def test_a_day_is_predicted_from_the_days_before_only(smooth: bool) -> None:
    """The last day holds one game. Its three possible results must get probabilities that
    sum to 1: had the model seen the day's result before predicting it, each version would
    favour its own result and the sum would exceed 1. Earlier days are untouched by it."""
    data = synthetic()
    last = len(data.times) - 1
    data = histories.MatchHistory(
        data.name, data.composition, data.results, [*data.times[:last], data.times[last] + 1.0]
    )
    schedule = predictive.days(data)
    assert len(schedule[-1]) == 1
    test_from = predictive.first_test_day(schedule, len(data.times))
    before = predictive.bayesian(data, SETTINGS, test_from, schedule[:-1], smooth)
    total = 0.0
    for result in ([1.0, 0.0], [0.0, 1.0], [0.5, 0.5]):
        version = histories.MatchHistory(
            data.name, data.composition, [*data.results[:last], result], data.times
        )
        score = predictive.bayesian(version, SETTINGS, test_from, schedule, smooth)
        assert score.games == before.games + 1
        total += math.exp(score.log_probability - before.log_probability)
    assert total == pytest.approx(1.0, abs=1e-12)


def test_the_table_compares_every_model_with_ttt() -> None:
    data = synthetic(days=80)
    scores = predictive.evaluate(data, SETTINGS)
    assert [s.model for s in scores] == ["Elo", "TrueSkill", "TTT"]
    assert len({s.games for s in scores}) == 1 and scores[0].games >= 0.25 * len(data.times)
    ttt = scores[2]
    assert ttt.log2_bayes_factor(ttt) == 0.0
    for score in scores:
        assert 0.0 < score.geometric_mean < 1.0
        assert score.log2_bayes_factor(ttt) == pytest.approx(
            (ttt.log_probability - score.log_probability) / math.log(2.0)
        )
    text = predictive.table(scores)
    assert text.count("\n") == 4 and "| TTT |" in text


def test_on_football_the_smoothed_model_predicts_better_than_the_filter() -> None:
    """A slice of real data with draws (the full run is `python -m app evaluate-history`)."""
    data = histories.football(DATASETS)
    n = 4000
    data = histories.MatchHistory(data.name, data.composition[:n], data.results[:n], data.times[:n])
    settings = predictive.Parameters(sigma=4.0, gamma=0.0087, p_draw=0.284)
    elo, trueskill, ttt = predictive.evaluate(data, settings)
    assert ttt.geometric_mean > trueskill.geometric_mean
    assert 0.3 < elo.geometric_mean < ttt.geometric_mean < 0.5
