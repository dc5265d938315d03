"""What a ticket carries beyond ratings: the players' roles and their avoid lists."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.simulation.roster import AvoidLists, Roles
from tests.simulation.helpers import population, scenario

ROLE_MIX = [
    {"accepts": ["tank"], "share": 0.5},
    {"accepts": ["damage", "tank"], "share": 0.5},
]


def played(avoid: AvoidLists, *pairs: tuple[int, int]) -> None:
    for pair in pairs:
        avoid.after_match(np.array(pair, dtype=np.int64))


def test_an_avoid_list_keeps_the_most_recent_players_it_listed() -> None:
    # Probability 1 in two-player matches: each player lists the other, every match.
    avoid = AvoidLists(5, 1.0, 2, np.random.default_rng(0))
    played(avoid, (0, 1), (0, 2), (0, 3))
    assert avoid.lists[0] == [2, 3]
    assert avoid.lists[3] == [0]
    played(avoid, (0, 2))  # listed again: moves to the most recent end, nothing dropped
    assert avoid.lists[0] == [3, 2]
    assert avoid.of([0]) == (3, 2)


def test_an_avoid_list_keeping_none_stays_empty() -> None:
    avoid = AvoidLists(4, 1.0, 0, np.random.default_rng(0))
    played(avoid, (0, 1), (2, 3), (0, 2))
    assert avoid.lists == [[], [], [], []]
    assert avoid.of([0]) == ()
    assert avoid.of([1, 2]) == ()


def test_an_avoid_list_keeping_fewer_than_none_is_refused() -> None:
    with pytest.raises(ValueError, match="0 or more"):
        AvoidLists(4, 0.5, -1, np.random.default_rng(0))


def test_roles_seat_preferences_under_the_modes_composition() -> None:
    roles_run = scenario(
        population={"size": 100, "roles": ROLE_MIX},
        mode={"teams": 2, "team_size": 2, "roles": {"tank": 1, "damage": 1}},
    )
    roles = Roles(roles_run, population(roles_run))
    tanks = np.flatnonzero(roles.first == 0).tolist()  # tank first: tank only, in this mix
    flexible = np.flatnonzero(roles.first == 1).tolist()
    assert roles.ticket([tanks[0], flexible[0]]) == (("tank",), ("damage", "tank"))
    assert roles.fits([tanks[0], flexible[0]])
    assert not roles.fits(tanks[:2])  # one team has one tank seat


def test_roles_without_a_composition_or_preferences_are_refused_with_a_value_error() -> None:
    plain = scenario()
    with pytest.raises(ValueError, match="role composition"):
        Roles(plain, population(plain))
    roles_run = scenario(
        population={"size": 100, "roles": ROLE_MIX},
        mode={"teams": 2, "team_size": 2, "roles": {"tank": 1, "damage": 1}},
    )
    unpreferred = dataclasses.replace(population(roles_run), preference=None)
    with pytest.raises(ValueError, match="role preferences"):
        Roles(roles_run, unpreferred)
