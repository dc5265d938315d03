"""The straight-line kernels of plain match shapes against the general path they specialise."""

from __future__ import annotations

import random

import pytest

from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.plain_kernels import MAX_PLAYERS, MAX_TEAMS, fits, plain_kernel


def random_match(rng: random.Random, teams: int, largest: int) -> tuple[list[tuple[Rating, ...]], list[int]]:
    groups = [
        tuple(Rating(rng.uniform(-20, 60), rng.uniform(1e-3, 12)) for _ in range(rng.randint(1, largest)))
        for _ in range(teams)
    ]
    # Shuffled ranks with ties, so the chain order is rarely the order given.
    ranks = [rng.randint(0, teams // 2) for _ in range(teams)]
    return groups, ranks


def general(env: TrueSkill, groups: list[tuple[Rating, ...]], ranks: list[int]) -> list[tuple[Rating, ...]]:
    """The same match with every weight 1 given: the general path that weighted posts take."""
    rated = env.rate(groups, ranks, weights=[[1.0] * len(group) for group in groups])
    return [tuple(team) for team in rated]


@pytest.mark.parametrize("seed", range(4))
def test_plain_shapes_are_rated_as_the_general_path_rates_them_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    env = TrueSkill(draw_probability=rng.choice([0.05, 0.1, 0.25, 0.5]))
    for _ in range(150):
        groups, ranks = random_match(rng, rng.randint(3, 9), 4)
        assert env.rate(groups, ranks) == general(env, groups, ranks)


def test_shapes_beyond_the_kernels_are_rated_alike() -> None:
    rng = random.Random(7)
    env = TrueSkill()
    for teams, size in ((MAX_TEAMS + 1, 1), (3, MAX_PLAYERS)):
        groups = [
            tuple(Rating(rng.uniform(0, 50), rng.uniform(1, 9)) for _ in range(size)) for _ in range(teams)
        ]
        ranks = [rng.randint(0, 2) for _ in range(teams)]
        assert not fits(tuple(len(group) for group in groups))
        assert env.rate(groups, ranks) == general(env, groups, ranks)


def test_a_tie_without_a_draw_probability_is_refused() -> None:
    env = TrueSkill(draw_probability=0.0)
    groups = [(Rating(),), (Rating(), Rating()), (Rating(),)]
    assert [len(team) for team in env.rate(groups, [0, 1, 2])] == [1, 2, 1]
    with pytest.raises(RatingInputError, match="draw_probability is 0"):
        env.rate(groups, [0, 1, 1])


def test_kernels_are_built_once_per_shape_and_only_where_they_fit() -> None:
    assert plain_kernel((1, 2, 1)) is plain_kernel((1, 2, 1))
    assert fits((1,) * MAX_TEAMS) and not fits((1,) * (MAX_TEAMS + 1))
    assert fits((MAX_PLAYERS - 2, 1, 1)) and not fits((MAX_PLAYERS - 1, 1, 1))
    for sizes in ((1, 1), (MAX_PLAYERS, 1, 1), (1, 0, 1)):
        with pytest.raises(ValueError, match="no plain kernel"):
            plain_kernel(sizes)
