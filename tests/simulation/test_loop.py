"""What both clocks share: a run's state, a party's arrival and the match tally."""

from __future__ import annotations

from typing import Any

import numpy as np

from app.simulation.baselines import elo_k
from app.simulation.loop import LoopState
from app.simulation.population import Streams
from tests.simulation.helpers import population, scenario


def state_of(**tables: Any) -> LoopState:
    run = scenario(**tables)
    return LoopState.of(run, population(run), Streams.of(run.seed))


def test_a_party_arrives_from_the_offline_players_and_is_turned_away_when_none_is_left() -> None:
    state = state_of(population={"size": 4})
    came = [state.arrive() for _ in range(4)]
    assert sorted(p for party in came for p in party) == [0, 1, 2, 3]
    assert state.recorder.turned_away == 0
    assert state.arrive() == []
    assert state.recorder.turned_away == 1
    state.offline.put_back(came[0])
    assert state.arrive() == came[0]


def test_the_tally_scores_and_records_a_batch_of_matches() -> None:
    state = state_of(population={"size": 8}, mode={"teams": 2, "team_size": 2})
    beta = state.mode.beta
    state.columns.elo[:] = 25.0
    players = np.arange(8, dtype=np.int64).reshape(2, 2, 2)
    placed = np.array([[1.0, 2.0], [1.0, 1.0]])  # the first team wins the first match, a draw
    mu = np.array([[[30.0, 20.0], [25.0, 24.0]], [[25.0, 25.0], [25.0, 25.0]]])
    sigma = np.full((2, 2, 2), 2.0)
    tallied = state.tally(
        players,
        placed,
        np.array([0, 1], dtype=np.int64),
        mu,
        sigma,
        np.array([10.0, 20.0]),
        np.array([0.5, 0.6]),
        [None, "nowhere"],
    )
    assert tallied.score.tolist() == [[[1.0, 1.0], [0.0, 0.0]], [[0.5, 0.5], [0.5, 0.5]]]
    # Equal Elo: the winners gain K/2, the losers lose as much, a draw moves nobody.
    half = elo_k(beta) / 2
    assert np.allclose(tallied.elo, [[[25 + half] * 2, [25 - half] * 2], [[25.0] * 2, [25.0] * 2]])
    assert (state.columns.elo == 25.0).all()  # the clock applies the new Elo when it sees the result
    formed, quality, gap, spread, outcome, region, count = state.recorder.match_columns[0]
    assert formed.tolist() == [10.0, 20.0] and quality.tolist() == [0.5, 0.6]
    assert gap.tolist() == [1.0, 0.0]
    assert np.allclose(spread, 4 * (4.0 + beta * beta))
    assert outcome.tolist() == [0, 1] and region.tolist() == [-1, -1] and count.tolist() == [4, 4]


def test_a_match_tallied_alone_is_tallied_as_in_a_batch() -> None:
    state = state_of(population={"size": 9}, mode={"teams": 3, "team_size": 1})
    state.columns.elo[:] = np.linspace(20.0, 30.0, 9)
    players = np.arange(9, dtype=np.int64).reshape(3, 3, 1)
    placed = np.array([[1.0, 2.0, 3.0], [2.0, 2.0, 1.0], [3.0, 1.0, 2.0]])
    mu = np.full((3, 3, 1), 25.0)
    sigma = np.full((3, 3, 1), 3.0)
    outcome = np.full(3, -1, dtype=np.int64)
    batch = state.tally(players, placed, outcome, mu, sigma, np.zeros(3), np.ones(3), [None] * 3)
    for number in range(3):
        one = slice(number, number + 1)
        alone = state.tally(
            players[one], placed[one], outcome[one], mu[one], sigma[one], np.zeros(1), np.ones(1), [None]
        )
        assert np.array_equal(alone.elo[0], batch.elo[number])
        assert np.array_equal(alone.score[0], batch.score[number])
    # Three teams: the winner won both duels, the last none; tied seconds half of theirs.
    assert batch.score[:, :, 0].tolist() == [[1.0, 0.5, 0.0], [0.25, 0.25, 1.0], [0.0, 1.0, 0.5]]
    assert np.isnan(state.recorder.match_columns[0][2]).all()  # no gap beyond two teams


def test_a_result_seen_updates_its_players_and_drifts_their_true_skills() -> None:
    still = state_of(population={"size": 4})
    players = np.array([2, 0], dtype=np.int64)
    skill = still.columns.skill.copy()
    still.seen(
        players, np.array([30.0, 20.0]), np.array([5.0, 6.0]), np.array([26.0, 24.0]), np.array([1.0, 0.0])
    )
    assert still.columns.mu[[2, 0]].tolist() == [30.0, 20.0]
    assert still.columns.sigma[[2, 0]].tolist() == [5.0, 6.0]
    assert still.columns.elo[[2, 0]].tolist() == [26.0, 24.0]
    assert still.columns.games.tolist() == [1, 0, 1, 0]
    assert still.columns.score.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert np.array_equal(still.columns.skill, skill)  # no drift in TINY
    drifting = state_of(population={"size": 4}, truth={"skill_drift": 0.5})
    skill = drifting.columns.skill.copy()
    drifting.seen(players, np.ones(2), np.ones(2), np.ones(2), np.zeros(2))
    moved = drifting.columns.skill != skill
    assert moved.tolist() == [True, False, True, False]
