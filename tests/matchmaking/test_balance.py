"""Team balancing: exact up to 12 players, parties kept together, heuristic within 1% of exact."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from app.matchmaking.balance import EXACT_LIMIT, _heuristic, balance, team_sizes, units_of
from app.matchmaking.quality import pair_quality
from app.rating import Rating, RatingInputError, TrueSkill, quality_1vs1

ENV = TrueSkill()


def lobby(rng: random.Random, n: int) -> list[Rating]:
    return [Rating(rng.uniform(5, 45), rng.uniform(0.5, 8)) for _ in range(n)]


def test_exact_split_is_the_best_of_every_split() -> None:
    rng = random.Random(2)
    ratings = lobby(rng, 8)
    split = balance(ratings, 2, env=ENV)
    best = max(
        ENV.quality([[ratings[i] for i in combo], [ratings[i] for i in range(8) if i not in combo]])
        for combo in itertools.combinations(range(8), 4)
    )
    assert split.exact
    assert split.quality == pytest.approx(best, rel=1e-12)
    assert split.quality == pytest.approx(
        ENV.quality([[ratings[i] for i in t] for t in split.teams]), rel=1e-12
    )


def test_sizes_are_as_equal_as_the_count_allows() -> None:
    assert team_sizes(10, 3) == [4, 3, 3]
    split = balance(lobby(random.Random(3), 10), 3, env=ENV)
    assert sorted(len(t) for t in split.teams) == [3, 3, 4]
    assert sorted(p for t in split.teams for p in t) == list(range(10))


def test_parties_stay_together() -> None:
    rng = random.Random(4)
    ratings = lobby(rng, 10)
    split = balance(ratings, 2, parties=[[0, 1, 2], [3, 4]], env=ENV)
    team_of = {p: i for i, t in enumerate(split.teams) for p in t}
    assert team_of[0] == team_of[1] == team_of[2]
    assert team_of[3] == team_of[4]
    big = balance(lobby(rng, 30), 2, parties=[[0, 1, 2], [3, 4]], env=ENV)
    team_of = {p: i for i, t in enumerate(big.teams) for p in t}
    assert team_of[0] == team_of[1] == team_of[2] and team_of[3] == team_of[4]
    assert sorted(len(t) for t in big.teams) == [15, 15]


@pytest.mark.parametrize(
    ("players", "teams", "parties", "message"),
    [
        (4, 2, [[0, 1, 2]], "a party of 3 does not fit in a team of 2"),
        (4, 1, [], "a lobby needs at least 2 teams"),
        (6, 2, [[0, 1], [2, 3], [4, 5]], r"the parties cannot be split into teams of sizes \[3, 3\]"),
        (5, 2, [[0, 1, 2]], None),  # teams of 3 and 2: the party fits the bigger one
        (4, 2, [[0, 9]], "not in the lobby"),
        (4, 2, [[0], [0]], "two parties"),
        (3, 4, [], "cannot form"),
        (6, 3, [[0, 1], [2, 3], [4, 5]], None),
    ],
)
def test_infeasible_parties_are_named(
    players: int, teams: int, parties: list[list[int]], message: str | None
) -> None:
    ratings = lobby(random.Random(5), players)
    if message is None:
        assert len(balance(ratings, teams, parties, ENV).teams) == teams
        return
    with pytest.raises(RatingInputError, match=message):
        balance(ratings, teams, parties, ENV)


def test_heuristic_reaches_99_percent_of_exact_on_random_12_player_lobbies() -> None:
    rng = random.Random(6)
    ratios = []
    for trial in range(120):
        ratings = lobby(rng, EXACT_LIMIT)
        teams = rng.choice([2, 3, 4])
        parties = [[0, 1]] if trial % 3 == 0 else []
        exact = balance(ratings, teams, parties, ENV)
        beta2 = ENV.beta**2
        guess = _heuristic(
            units_of(ratings, parties, beta2)[0], team_sizes(len(ratings), teams), beta2, random.Random(trial)
        )
        assert guess.quality <= exact.quality * (1 + 1e-9)
        ratios.append(guess.quality / exact.quality)
    assert sum(ratios) / len(ratios) >= 0.99


def test_pair_quality_is_equation_7() -> None:
    rng = random.Random(14)
    a = [Rating(rng.uniform(0, 50), rng.uniform(0.5, 9)) for _ in range(200)]
    b = [Rating(rng.uniform(0, 50), rng.uniform(0.5, 9)) for _ in range(200)]
    quality = pair_quality(
        np.array([r.mu for r in a]),
        np.array([r.sigma**2 for r in a]),
        np.array([r.mu for r in b]),
        np.array([r.sigma**2 for r in b]),
        ENV.beta**2,
    )
    for q, x, y in zip(quality.tolist(), a, b, strict=True):
        assert q == pytest.approx(quality_1vs1(x, y, env=ENV), rel=1e-13)
