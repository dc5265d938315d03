"""The engine's answers do not depend on the order a team's players are listed in."""

from __future__ import annotations

import random

import pytest

from app.rating import Rating, TrueSkill


@pytest.mark.parametrize("seed", range(20))
def test_a_permuted_team_rates_to_the_same_bits(seed: int) -> None:
    # A replay lists a team's players by id, and an erasure renames one: the ratings must
    # come out bit for bit as when the players were posted in another order.
    rng = random.Random(seed)
    env = TrueSkill()
    teams = [
        [Rating(rng.uniform(0, 50), rng.uniform(0.5, 9)) for _ in range(rng.randint(3, 6))]
        for _ in range(rng.randint(2, 4))
    ]
    weights = [[rng.choice([1.0, rng.uniform(0.1, 1)]) for _ in team] for team in teams]
    ranks = [rng.randint(0, 2) if env.draw_probability else i for i, _ in enumerate(teams)]
    orders = [rng.sample(range(len(team)), len(team)) for team in teams]
    permuted = [[team[i] for i in order] for team, order in zip(teams, orders, strict=True)]
    permuted_weights = [[w[i] for i in order] for w, order in zip(weights, orders, strict=True)]

    straight = env.rate(teams, ranks, weights)
    shuffled = env.rate(permuted, ranks, permuted_weights)

    for team, order, back in zip(straight, orders, shuffled, strict=True):
        for position, index in enumerate(order):
            assert (back[position].mu, back[position].sigma) == (team[index].mu, team[index].sigma)
    assert env.quality(teams, weights) == env.quality(permuted, permuted_weights)
