"""A game a player left: its seats, its backfill, and its rating with partial play."""

from __future__ import annotations

import numpy as np

from app.rating import TrueSkill
from app.simulation.leaving import Game, Leaving, Seat, rate_partial, share_left


def two_v_two() -> Game:
    """A 2v2 game from time 100 to 200: players 0, 1 against 2, 3."""
    seats = [Seat(player, player // 2, player, 100.0, 200.0) for player in range(4)]
    return Game(100.0, 200.0, 2, 0.4, "eu", seats, [0, 1, 2, 3], [[], []])


def test_a_leave_opens_the_seat_and_a_fill_shares_the_game_by_time_played() -> None:
    game = two_v_two()
    game.seats[1].left = 125.0
    game.open_backfill(125.0, 2)
    assert game.present(0) == [0]
    assert game.open_since == [[125.0], []]
    assert game.backfill_since == 125.0
    mu, sigma = np.arange(10.0, 20.0), np.full(10, 2.0)
    opening = game.opening(mu, sigma, 140.0)
    assert opening.mu.tolist() == [10.0, 12.0 + 13.0]
    assert opening.var.tolist() == [4.0, 8.0]
    assert opening.players.tolist() == [1, 2]
    assert opening.open.tolist() == [1, 0]
    assert (opening.region, opening.age) == ("eu", 15.0)
    assert game.short()
    # A later leave of the other team grows the backfill, which keeps its age.
    game.seats[3].left = 150.0
    game.open_backfill(150.0, 2)
    assert game.open_since == [[125.0], [150.0]]
    assert game.opening(mu, sigma, 160.0).age == 35.0
    # Player 7 fills team 0's seat at 150: the game is then short only in team 1.
    game.seats.append(Seat(7, 0, 7, 150.0, 200.0))
    game.open_since[0].pop(0)
    assert game.weights().tolist() == [1.0, 0.25, 1.0, 0.5, 0.5]
    assert [team.tolist() for team in game.teams()] == [[0, 1, 4], [2, 3]]
    assert game.short()
    game.seats.append(Seat(8, 1, 8, 150.0, 200.0))
    game.open_since[1].pop(0)
    assert not game.short()
    assert game.open_seats() == 0


def test_leaving_draws_a_share_of_the_match_for_those_who_leave() -> None:
    assert not share_left(Leaving(0.0, np.random.default_rng(1)).draw(50))
    shares = Leaving(1.0, np.random.default_rng(1)).draw(50)
    assert ((shares >= 0) & (shares < 1)).all()
    some = Leaving(0.3, np.random.default_rng(1)).draw(1000)
    assert 0.25 < np.isfinite(some).mean() < 0.35


def test_a_player_who_played_half_the_game_moves_less_than_one_who_played_it_all() -> None:
    env = TrueSkill()
    weights = [np.array([1.0, 0.5]), np.array([1.0, 1.0])]
    mu, sigma = np.full(4, 25.0), np.full(4, 25.0 / 3.0)
    rated = rate_partial(env, weights, np.array([1.0, 2.0]), mu, sigma)
    assert not rated.refused
    assert mu[0] > mu[1] > 25.0 > mu[2] == mu[3]
    assert sigma[0] < sigma[1] < 25.0 / 3.0
