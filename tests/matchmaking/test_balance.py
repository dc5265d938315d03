"""Team balancing: exact up to 12 players, parties kept together, heuristic within 1% of exact."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from app.matchmaking.balance import EXACT_LIMIT, _heuristic, balance, team_sizes, units_of
from app.matchmaking.quality import pair_quality
from app.matchmaking.roles import Composition
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


COMPOSITION = Composition.of({"tank": 1, "healer": 1, "damage": 3})


def roles_met(split_roles: list[list[int]], composition: Composition) -> bool:
    return all(
        sorted(team) == sorted(r for r, c in enumerate(composition.counts) for _ in range(c))
        for team in split_roles
    )


@pytest.mark.parametrize("seed", range(8))
def test_a_composition_takes_the_best_split_whose_teams_can_seat_their_players(seed: int) -> None:
    rng = random.Random(seed)
    ratings = lobby(rng, 10)
    choices = [
        ["tank"],
        ["healer"],
        ["damage"],
        ["tank", "damage"],
        ["healer", "damage"],
        ["damage", "healer", "tank"],
    ]
    roles = [rng.choice(choices) for _ in range(10)]
    roles[0], roles[1], roles[2], roles[3] = ["tank"], ["tank", "damage"], ["healer"], ["healer", "damage"]
    parties = [[4, 5]] if seed % 2 else []
    # Brute force: every split into fives (parties together) with a seating for both teams.
    best = 0.0
    for combo in itertools.combinations(range(10), 5):
        other = [p for p in range(10) if p not in combo]
        if parties and (4 in combo) != (5 in combo):
            continue
        if all(COMPOSITION.fits([COMPOSITION.mask(roles[p]) for p in team]) for team in (combo, other)):
            best = max(best, ENV.quality([[ratings[p] for p in combo], [ratings[p] for p in other]]))
    if best == 0.0:
        with pytest.raises(RatingInputError, match="roles cannot be met"):
            balance(ratings, 2, parties, ENV, roles=roles, composition=COMPOSITION)
        return
    split = balance(ratings, 2, parties, ENV, roles=roles, composition=COMPOSITION)
    assert split.exact and split.roles is not None
    assert roles_met(split.roles, COMPOSITION)
    for team, team_roles in zip(split.teams, split.roles, strict=True):
        assert all(COMPOSITION.roles[r] in roles[p] for p, r in zip(team, team_roles, strict=True))
    assert split.quality == pytest.approx(best, rel=1e-12)


def test_above_the_exact_limit_every_team_still_meets_the_composition() -> None:
    rng = random.Random(21)
    composition = Composition.of({"tank": 2, "healer": 2, "damage": 4})
    ratings = lobby(rng, 24)
    roles = [["tank"] if i < 6 else ["healer", "damage"] if i < 12 else ["damage"] for i in range(24)]
    rng.shuffle(roles)
    split = balance(ratings, 3, [[0, 1]], ENV, roles=roles, composition=composition)
    assert not split.exact and split.roles is not None
    assert roles_met(split.roles, composition)
    for team, team_roles in zip(split.teams, split.roles, strict=True):
        assert all(composition.roles[r] in roles[p] for p, r in zip(team, team_roles, strict=True))
    assert split.quality == pytest.approx(
        ENV.quality([[ratings[p] for p in team] for team in split.teams]), rel=1e-12
    )


@pytest.mark.parametrize(
    ("roles", "message"),
    [
        ([["damage"]] * 10, "roles cannot be met"),
        ([["tank"]] * 10, "roles cannot be met"),
    ],
)
def test_compositions_no_split_can_meet_are_named(roles: list[list[str]], message: str) -> None:
    with pytest.raises(RatingInputError, match=message):
        balance(lobby(random.Random(1), 10), 2, env=ENV, roles=roles, composition=COMPOSITION)
    with pytest.raises(RatingInputError, match="cannot fill"):
        balance(lobby(random.Random(1), 8), 2, env=ENV, roles=[["damage"]] * 8, composition=COMPOSITION)
