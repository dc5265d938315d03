"""The report's figures from a run, and the issue's targets."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

from app.simulation import measures
from app.simulation.record import EXPIRED, MATCHED, Checkpoint, Run
from app.simulation.truth import DRAW, FIRST_WINS, SECOND_WINS
from tests.simulation.helpers import scenario


def make_run(**columns: Any) -> Run:
    """A run with nothing in it but the given columns."""
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    values: dict[str, Any] = {
        "clock": "virtual",
        "pairing": "quality",
        "duration": 3600.0,
        "wall_seconds": 1.0,
        "ticket_enqueued": empty_f,
        "ticket_waited": empty_f,
        "ticket_outcome": empty_i,
        "ticket_players": empty_i,
        "ticket_skill": empty_f,
        "ticket_region": empty_i,
        "match_formed": empty_f,
        "match_quality": empty_f,
        "match_gap": empty_f,
        "match_spread": empty_f,
        "match_outcome": empty_i,
        "match_region": empty_i,
        "skill": empty_f,
        "games": empty_i,
        "score": empty_f,
        "mu": empty_f,
        "sigma": empty_f,
        "elo": empty_f,
        "checkpoints": (),
    }
    values.update(columns)
    return Run(**values)


def test_waits_over_time_count_each_ticket_in_the_window_it_left() -> None:
    run = make_run(
        duration=7200.0,
        ticket_enqueued=np.array([0.0, 100.0, 3590.0, 5000.0]),
        ticket_waited=np.array([10.0, 20.0, 30.0, 300.0]),
        ticket_outcome=np.array([MATCHED, MATCHED, MATCHED, EXPIRED]),
    )
    assert measures.window_seconds(7200) == 300
    rows = measures.waits_over_time(run)
    assert len(rows) == 24
    assert (rows[0].tickets, rows[0].p50) == (2, 15.0)
    assert rows[12].tickets == 1  # left at 3620 s
    assert rows[17].expired == 1  # at 5300 s
    assert rows[0].label == "0:00–0:05"
    assert measures.clock_label(90061) == "1d 1:01:01"


def test_fairness_counts_scores_within_35_to_65_percent_and_what_chance_allows() -> None:
    run = make_run(
        games=np.array([10, 10, 20, 1]),
        score=np.array([5.0, 7.0, 7.0, 1.0]),
        match_outcome=np.array([FIRST_WINS, SECOND_WINS]),
    )
    rows = {row.games: row for row in measures.fairness(run)}
    assert (rows[1].players, rows[1].within) == (4, 0.5)  # 50% and 35% in; 70% and 100% out
    assert (rows[10].players, rows[10].within) == (3, pytest.approx(2 / 3))
    assert rows[20].players == 1
    # Without draws, chance keeps 4 to 6 wins of 10 within: 672/1024 of fair players.
    assert measures._fair_within(10, 0.0) == pytest.approx(672 / 1024)
    both = (math.comb(20, 7) + math.comb(20, 8) + math.comb(20, 9) + math.comb(20, 10)) * 2 - math.comb(
        20, 10
    )
    assert measures._fair_within(20, 0.0) == pytest.approx(both / 2**20)


def test_predictions_are_the_modes_own() -> None:
    tiny = scenario()
    beta = tiny.mode.beta
    spread = 2 * 25 / 9 + 2 * beta**2
    run = make_run(match_gap=np.array([0.0, 4.0]), match_spread=np.array([spread, spread]))
    win, draw = measures.predictions(run, tiny)
    c = math.sqrt(spread)
    assert win[0] == pytest.approx(0.5)
    assert win[1] == pytest.approx(0.5 * math.erfc(-4.0 / c / math.sqrt(2)))
    margin = NormalDist().inv_cdf(0.55) * math.sqrt(2) * beta  # seed 000 §4.1, p = 0.1
    assert draw[0] == pytest.approx(math.erf(margin / c / math.sqrt(2)), rel=1e-6)


def test_draws_and_calibration_group_the_two_team_matches() -> None:
    rng = np.random.default_rng(1)
    count = 5000
    quality = rng.uniform(0.2, 0.9, count)
    outcome = np.where(rng.random(count) < quality / 5, DRAW, FIRST_WINS)
    run = make_run(
        match_quality=quality,
        match_gap=np.full(count, 2.0),
        match_spread=np.full(count, 50.0),
        match_outcome=outcome,
    )
    rows = measures.draws_by_quality(run, scenario())
    assert len(rows) == 10
    assert sum(row.matches for row in rows) == count
    assert rows[-1].observed > rows[0].observed
    x, y = measures.cumulative_draws(run)
    assert (x[0], y[0], x[-1], y[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert y[len(y) // 2] > 0.5  # the draws come early when sorted by quality
    (calibration,) = measures.calibration(run, scenario())
    assert calibration.matches == count
    assert calibration.observed == pytest.approx(1.0 - 0.5 * (outcome == DRAW).mean())


def test_the_information_limit_follows_seed_000() -> None:
    one = scenario()
    players = 1000
    bits = math.lgamma(players + 1) / math.log(2)
    assert measures.information_limit(one, players) == pytest.approx(bits * 2 / players / math.log2(3))
    free_for_all = scenario(mode={"teams": 8, "team_size": 1, "draw_probability": 0.0})
    # Seed 000: log(n!)/log(8!) matches of 8, each player in 8/n of them.
    assert measures.information_limit(free_for_all, players) == pytest.approx(
        bits / math.log2(math.factorial(8)) * 8 / players
    )


def test_games_to_a_correlation_interpolates_between_checkpoints() -> None:
    points = [
        Checkpoint(1, 100, 0.5, 0.5, 0.4),
        Checkpoint(2, 100, 0.7, 0.7, 0.6),
        Checkpoint(3, 100, 0.9, 0.9, 0.7),
    ]
    assert measures.games_to(points, "displayed") == pytest.approx(2.5)
    assert measures.games_to(points, "elo") is None
    assert measures.games_to(points, "mu", 0.25) == pytest.approx(0.5)


def test_targets_say_which_failed_and_why() -> None:
    skill = np.linspace(0, 50, 100)
    good = [Checkpoint(g, 100, 0.5 + 0.1 * g, 0.5 + 0.1 * g, 0.4 + 0.1 * g) for g in (1, 2, 3)]
    run = make_run(
        skill=skill,
        games=np.full(100, 10),
        score=np.where((skill < 8) | (skill > 42), 9.0, 5.0),
        checkpoints=tuple(good),
        match_outcome=np.array([FIRST_WINS]),
    )
    slower = make_run(checkpoints=(Checkpoint(1, 100, 0.5, 0.5, 0.5), Checkpoint(2, 100, 0.6, 0.6, 0.6)))
    fair, elo, speed = measures.targets(run, slower)
    assert not fair.passed
    assert fair.figure == "68.0% of 100 players (fair coin flips: 65.6%)"
    assert "lowest and highest true-skill deciles have 0% and 0% of their players within" in fair.why
    assert "deciles 2–9 together 85%" in fair.why
    assert elo.passed
    assert speed.passed
    assert speed.figure == "3.0 games played (random pairing: never)"
    tied = make_run(checkpoints=(Checkpoint(1, 100, 0.5, 0.5, 0.5),))
    _, elo = measures.targets(tied, None)
    assert not elo.passed
    assert "the very same results" in elo.why
