"""The predictive comparison of seed 001 §3.9: Elo's update, no peeking at the day predicted,
and the table's arithmetic."""

from __future__ import annotations

import datetime as dt
import gzip
import itertools
import math
import random
from pathlib import Path

import pytest

from app.evaluation import histories, predictive
from app.progress import Progress
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


def write_atp(path: Path) -> None:
    """Two tournaments in the published ATP layout, rows out of round order, with a walkover,
    a retirement and a Davis Cup rubber."""
    header = (
        "date,tourney_id,tourney_name,tourney_level,surface,round,match_num,best_of,"
        "winner_id,loser_id,winner_name,loser_name,score"
    )
    rows = [
        "1990-01-08,t2,Next,A,Hard,R16,1,3,1,2,W,L,6-1 6-1",
        "1990-01-01,t1,Open,A,Hard,F,3,3,1,3,W,L,6-4 6-4",
        "1990-01-01,t1,Open,A,Hard,SF,2,3,1,4,W,L,6-3 2-1 RET",
        "1990-01-01,t1,Open,A,Hard,SF,1,3,3,2,W,L,W/O",
        "1990-01-01,t1,Open,A,Hard,QF,0,3,2,5,W,L,6-0 6-0",
        "1990-01-08,t3,Cup,D,Clay,RR,1,5,6,7,W,L,6-2 6-2 6-2",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join([header, *rows]) + "\n")


def test_the_atp_extracts(tmp_path: Path) -> None:
    write_atp(tmp_path / "atp" / "atp_singles_1968_2024.csv.gz")
    start = float((dt.date(1990, 1, 1) - dt.date(1970, 1, 1)).days)

    def games(extract: histories.AtpExtract) -> list[tuple[float, str, str]]:
        data = histories.atp(tmp_path, extract)
        assert all(r == [1.0, 0.0] for r in data.results)
        return [(t, c[0][0], c[1][0]) for t, c in zip(data.times, data.composition, strict=True)]

    # Tournament start dates, the file's order within a date, the walkover dropped.
    assert games(histories.AtpExtract()) == [
        (start, "1", "3"),
        (start, "1", "4"),
        (start, "2", "5"),
        (start + 7, "1", "2"),
        (start + 7, "6", "7"),
    ]
    # Rounds: QF, SF, F at start + 5/8, 6/8, 7/8; Davis Cup's round robin at its start.
    step = histories.ROUND_STEP
    assert games(histories.AtpExtract(rounds=True)) == [
        (start + 5 * step, "2", "5"),
        (start + 6 * step, "1", "4"),
        (start + 7 * step, "1", "3"),
        (start + 7, "6", "7"),
        (start + 7 + 4 * step, "1", "2"),
    ]
    assert len(games(histories.AtpExtract(walkovers=True))) == 6
    assert ("1", "4") not in [g[1:] for g in games(histories.AtpExtract(retirements=False))]
    assert ("6", "7") not in [g[1:] for g in games(histories.AtpExtract(davis_cup=False))]
    assert histories.AtpExtract(rounds=True, davis_cup=False).label == "rounds, no Davis Cup"
    # Player 1 plays three matches, 2 two (the walkover is dropped first), the others one.
    assert [g[1:] for g in games(histories.AtpExtract(regulars=2))] == [("1", "2")]


def test_experience_counts_games_of_earlier_days_only() -> None:
    data = histories.MatchHistory(
        "x",
        [[["a"], ["b"]], [["a"], ["c"]], [["a"], ["b"]], [["c"], ["d"]]],
        [[1.0, 0.0]] * 4,
        [0.0, 0.0, 1.0, 1.0],
    )
    # Day 0: nobody has played; day 1: a 2, b 1, c 1, d 0.
    assert predictive.experience(data, predictive.days(data)) == [(0, 0), (0, 0), (2, 1), (1, 0)]


def test_a_score_restricted_to_some_games() -> None:
    score = predictive.Score("Elo", (math.log(0.5), math.log(0.8), math.log(0.6)))
    part = score.where([True, False, True])
    assert part.games == 2
    assert part.geometric_mean == pytest.approx(math.sqrt(0.5 * 0.6))
    with pytest.raises(ValueError, match="shorter"):
        score.where([True])


def test_elo_and_trueskill_fits_read_the_training_days_only() -> None:
    """The fitted α predicts the training days at least as well as the default, and neither
    fit changes when the predicted days' results are reversed."""
    data = synthetic(days=60)
    alpha, best = predictive.fit_elo(data, SETTINGS, steps=8)
    schedule = predictive.days(data)
    training = schedule[: predictive.first_test_day(schedule, len(data.times))]
    default = predictive.elo(data, SETTINGS, 0, training).log_probability
    assert 1e-3 <= alpha <= 1.0 and best >= default
    first = training[-1].stop
    flipped = histories.MatchHistory(
        data.name,
        data.composition,
        data.results[:first] + [r[::-1] for r in data.results[first:]],
        data.times,
    )
    assert predictive.fit_elo(flipped, SETTINGS, steps=8) == (alpha, best)
    assert predictive.fit_trueskill(flipped, SETTINGS) == predictive.fit_trueskill(data, SETTINGS)


def test_the_command_runs_the_models_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate-history --model`: without TTT the Bayes factors are against the last model."""
    from app.cli import main

    code = main(["evaluate-history", "--source", "chess", "--model", "Elo", "--model", "TrueSkill"])
    out = capsys.readouterr().out
    assert code == 0
    assert "(TrueSkill vs model)" in out and "| Elo | " in out and "| TTT |" not in out


def test_a_ttt_that_sweeps_less_often_predicts_differently() -> None:
    """sweep_every=1 is the paper's procedure; a TTT that never sweeps during the test part
    starts from the same smoothed training history, so it predicts the first test day alike
    and later days otherwise."""
    data = synthetic(days=80)
    schedule = predictive.days(data)
    test_from = predictive.first_test_day(schedule, len(data.times))
    every = predictive.bayesian(data, SETTINGS, test_from, schedule, True)
    never = predictive.bayesian(data, SETTINGS, test_from, schedule, True, sweep_every=10**6)
    first_day = len(schedule[test_from])
    assert every.log_probabilities[:first_day] == never.log_probabilities[:first_day]
    assert every.log_probabilities[first_day:] != never.log_probabilities[first_day:]


def test_an_evaluation_moves_its_progress_through_every_model() -> None:
    """Each model's part moves many times (Elo by days, the Bayesian models by training
    sweeps and predicted days), never backwards, to the end."""
    data = synthetic(days=80)
    traced: list[float] = []
    predictive.evaluate(data, SETTINGS, Progress(trace=traced.append))
    assert traced == sorted(traced) and traced[-1] == 1.0
    total = sum(predictive.MODEL_COST.values())
    ends = itertools.accumulate(predictive.MODEL_COST[m] / total for m in predictive.MODELS)
    starts = [0.0, *ends][:-1]
    test_days = len(predictive.days(data)) - predictive.first_test_day(predictive.days(data), len(data.times))
    for model, start, end in zip(predictive.MODELS, starts, [*starts[1:], 1.0], strict=True):
        inside = [v for v in traced if start < v <= end]
        # Elo ticks every TICK_DAYS days (80 days: once, then its end); the others every day.
        assert len(inside) >= (1 if model == "Elo" else test_days), (model, inside)
