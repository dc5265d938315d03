"""Elo as seed 000 ran it, and random pairing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.matchmaking.pool import Pool
from app.matchmaking.shape import MatchShape
from app.rating import Rating, TrueSkill
from app.simulation.baselines import elo_deltas, elo_k, random_matches

BETA = 25 / 6


def test_k_is_24_on_the_elo_scale() -> None:
    # Elo's class width is 200 points; K = 24 there is 0.5 where beta = 25/6.
    assert elo_k(200.0) == 24.0
    assert elo_k(BETA) == pytest.approx(0.5)


def test_equal_players_move_by_half_k_and_a_draw_moves_nobody() -> None:
    ratings = np.full((2, 2, 1), 25.0)
    deltas = elo_deltas(ratings, np.array([[1.0, 2.0], [1.0, 1.0]]), BETA)
    assert deltas[0].tolist() == pytest.approx([0.25, -0.25])
    assert deltas[1].tolist() == pytest.approx([0.0, 0.0])


def test_the_expected_score_is_seed_000_eq_1_on_team_averages() -> None:
    # Teams of two averaging 27 and 24: P(first wins) = Φ(3/(√2·β)); a win earns K·(1 − P).
    ratings = np.array([[[26.0, 28.0], [20.0, 28.0]]])
    expected = 0.5 * math.erfc(-3.0 / (math.sqrt(2.0) * BETA) / math.sqrt(2.0))
    deltas = elo_deltas(ratings, np.array([[1.0, 2.0]]), BETA)
    assert deltas[0, 0] == pytest.approx(0.5 * (1 - expected))
    assert deltas[0, 1] == pytest.approx(-0.5 * (1 - expected))


def test_more_teams_take_the_mean_of_their_duels() -> None:
    ratings = np.full((1, 3, 1), 25.0)
    deltas = elo_deltas(ratings, np.array([[1.0, 2.0, 3.0]]), BETA)
    # First beat both (+0.25 twice), second won one and lost one, third lost both.
    assert deltas[0].tolist() == pytest.approx([0.25, 0.0, -0.25])


def pool(sizes: list[int], seed: int = 0) -> Pool:
    rng = np.random.default_rng(seed)
    n = len(sizes)
    size = np.array(sizes, dtype=np.int64)
    return Pool(
        [str(i) for i in range(n)],
        size,
        rng.normal(25, 8, n) * size,
        rng.uniform(1, 60, n),
        rng.uniform(0, 30, n),
        np.zeros(n, dtype=np.int64),
    )


def test_random_pairing_uses_every_solo_ticket_it_can_once() -> None:
    waiting = pool([1] * 101)
    matches = random_matches(waiting, 2, 1, BETA, np.random.default_rng(1), 1000)
    rows = [row for match in matches for row in match.rows]
    assert len(matches) == 50
    assert len(set(rows)) == 100
    assert len(random_matches(waiting, 2, 1, BETA, np.random.default_rng(1), 7)) == 7


def test_random_pairing_fills_teams_exactly_with_parties() -> None:
    waiting = pool([1, 2, 3, 4, 1, 1, 2, 2, 3, 1, 1, 4, 2, 1] * 5)
    matches = random_matches(waiting, 2, 4, BETA, np.random.default_rng(2), 1000)
    assert matches
    used: set[int] = set()
    for match in matches:
        assert used.isdisjoint(match.rows)
        used.update(match.rows)
        assert [int(waiting.size[list(team)].sum()) for team in match.teams] == [4, 4]


def test_random_pairing_scores_each_match_by_seed_000_eq_7() -> None:
    waiting = pool([1, 1, 1, 1, 1, 1, 1, 1], seed=3)
    (match,) = random_matches(waiting, 2, 4, BETA, np.random.default_rng(4), 10)
    env = TrueSkill(beta=BETA)
    teams = [
        [Rating(float(waiting.mu[row]), math.sqrt(float(waiting.var[row]))) for row in team]
        for team in match.teams
    ]
    assert match.quality == pytest.approx(env.quality(teams), rel=1e-9)
    assert match.longest_wait == max(float(waiting.waited[row]) for row in match.rows)


def test_random_pairing_shrinks_a_match_as_far_as_the_longest_wait_accepts() -> None:
    # Squads of four, 25 a lobby, down to 15: 72 players, too few for a full lobby.
    waiting = pool([4, 2, 1, 1] * 6 + [4] * 6, seed=5)
    shape = MatchShape(25, 4, teams_min=15)
    assert int(waiting.size.sum()) == 72
    # Waits (up to 30 s) that accept only full lobbies: none forms, as without shrinking.
    assert random_matches(waiting, 25, 4, BETA, np.random.default_rng(6), 10, (shape, 1e9)) == []
    assert random_matches(waiting, 25, 4, BETA, np.random.default_rng(6), 10) == []
    # Waits past relax_seconds accept 60 players: one lobby of the squads the tickets fill.
    (match,) = random_matches(waiting, 25, 4, BETA, np.random.default_rng(6), 10, (shape, 1.0))
    assert 15 <= len(match.teams) <= 18
    assert all(int(waiting.size[list(team)].sum()) == 4 for team in match.teams)
    assert len(set(match.rows)) == len(match.rows)
