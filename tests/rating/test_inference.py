"""The engine's answers do not depend on the order a team's players are listed in."""

from __future__ import annotations

import random

import pytest

from app.rating import Rating, TrueSkill
from app.rating.inference import ChainMessages, chain_sweeps


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


@pytest.mark.parametrize("tolerance", [1e-6, 1e-9, 1e-12])
def test_the_sweeps_stop_once_settled_and_bound_the_last_move(tolerance: float) -> None:
    """An 8-team chain settles long before 200 sweeps: chain_sweeps returns a bound on its last
    pass's largest move (|dV| + |dW|) within the tolerance, and the messages it leaves are a
    fixed point: one more sweep moves nothing by more than that."""
    variances = [30.0 + k for k in range(8)]
    means = [25.0 - 1.5 * k for k in range(8)]
    prior_pi = [1.0 / v for v in variances]
    prior_tau = [m / v for m, v in zip(means, variances, strict=True)]
    margins = [0.7] * 7
    ties = [False, False, True, False, False, False, True]
    messages = ChainMessages.empty(8)
    bound = chain_sweeps(prior_pi, prior_tau, margins, ties, messages, tolerance, 200)
    assert 0.0 <= bound <= tolerance
    settled = [list(x) for x in (messages.left_pi, messages.left_tau, messages.right_pi, messages.right_tau)]
    again = chain_sweeps(prior_pi, prior_tau, margins, ties, messages, 0.0, 1)
    assert again <= tolerance
    after = [messages.left_pi, messages.left_tau, messages.right_pi, messages.right_tau]
    for before_list, after_list in zip(settled, after, strict=True):
        assert after_list == pytest.approx(before_list, rel=1e-6, abs=1e-9)
