"""Ranks, Spearman's correlation and the per-player checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from app.simulation.record import CHECKPOINT_GAMES, PlayerColumns, average_ranks, spearman


def test_average_ranks_and_spearman_agree_with_scipy_with_ties() -> None:
    rng = np.random.default_rng(1)
    a = rng.integers(0, 20, 500).astype(np.float64)  # many ties
    b = a + rng.normal(0, 5, 500)
    assert average_ranks(a).tolist() == stats.rankdata(a).tolist()
    assert spearman(a, b) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
    assert spearman(np.ones(10), np.arange(10.0)) == 0.0


def test_a_checkpoint_keeps_each_player_as_rated_right_after_that_game() -> None:
    count = 120
    skill = np.arange(count, dtype=np.float64)
    columns = PlayerColumns(skill, np.zeros(count), np.ones(count), np.zeros(count), 3.0)
    everyone = np.arange(count)
    # First game: ratings in the right order. Second game: only the first 80 play, reversed.
    columns.mu[:] = skill
    columns.elo[:] = -skill
    columns.finished(everyone, np.zeros(count))
    columns.mu[:80] = -skill[:80]
    columns.finished(everyone[:80], np.ones(80))
    first, second = columns.checkpoints()
    assert (first.games, first.players) == (1, 120)
    assert (first.displayed, first.mu, first.elo) == (
        pytest.approx(1.0),
        pytest.approx(1.0),
        pytest.approx(-1.0),
    )
    assert (second.games, second.players) == (2, 80)
    assert second.mu == pytest.approx(-1.0)
    # Later ratings do not change what was kept after a game.
    columns.mu[:] = 0.0
    assert columns.checkpoints()[0].mu == pytest.approx(1.0)
    assert columns.games.tolist() == [2] * 80 + [1] * 40
    assert columns.score.sum() == 80


def test_checkpoints_stop_where_too_few_players_reached_them() -> None:
    count = 200
    columns = PlayerColumns(
        np.arange(count, dtype=np.float64), np.zeros(count), np.ones(count), np.zeros(count), 0.0
    )
    for _ in range(3):
        columns.finished(np.arange(count), np.zeros(count))
    columns.finished(np.arange(10), np.zeros(10))  # only 10 reach a fourth game
    assert [c.games for c in columns.checkpoints()] == [1, 2, 3]
    assert CHECKPOINT_GAMES[:4] == (1, 2, 3, 4)
