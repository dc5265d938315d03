"""The report's figures from a run, and the issue's targets."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest

from app.simulation import measures
from app.simulation.record import EXPIRED, MATCHED
from app.simulation.truth import DRAW, FIRST_WINS
from tests.simulation.helpers import make_run, scenario


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
