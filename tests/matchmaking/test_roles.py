"""A composition per team: whether players can be seated, checked against every assignment."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from app.matchmaking.roles import MAX_ROLES, Composition

COMPOSITION = Composition.of({"tank": 1, "healer": 1, "damage": 3})


def seatable(composition: Composition, masks: list[int], teams: int = 1) -> bool:
    """Brute force: some role for each player within the slots of `teams` teams."""
    roles = range(len(composition.roles))
    for choice in itertools.product(roles, repeat=len(masks)):
        if all(mask >> role & 1 for mask, role in zip(masks, choice, strict=True)) and all(
            choice.count(role) <= teams * count for role, count in enumerate(composition.counts)
        ):
            return True
    return False


@pytest.mark.parametrize("seed", range(60))
def test_fits_is_hall_condition_as_brute_force_finds_it(seed: int) -> None:
    rng = random.Random(seed)
    players = rng.randint(1, 6)
    teams = rng.choice([1, 1, 2])
    masks = [rng.choice([0b001, 0b010, 0b100, 0b101, 0b110, 0b111, 0b100, 0b100]) for _ in range(players)]
    expected = seatable(COMPOSITION, masks, teams)
    assert COMPOSITION.fits(masks, teams) == expected
    preferences = [[r for r in range(3) if m >> r & 1] for m in masks]
    assigned = COMPOSITION.assign(preferences, teams)
    assert (assigned is not None) == expected
    if assigned is not None:
        assert all(masks[p] >> assigned[p] & 1 for p in range(players))
        assert all(assigned.count(r) <= teams * c for r, c in enumerate(COMPOSITION.counts))


def test_a_player_who_accepts_no_role_never_fits() -> None:
    assert not COMPOSITION.fits([0])
    assert COMPOSITION.assign([()]) is None


def test_assign_gives_first_choices_where_the_slots_allow() -> None:
    tank, healer, damage = 0, 1, 2
    # Everyone would rather deal damage; only the healer-only player forces the rest around.
    preferences = [(damage, tank), (damage, healer), (healer,), (damage,), (damage, tank)]
    roles = COMPOSITION.assign(preferences)
    assert roles is not None
    assert roles[2] == healer
    assert sorted(roles) == [tank, healer, damage, damage, damage]
    assert roles.count(damage) == 3 and roles[3] == damage


def test_masks_and_inside_follow_the_names() -> None:
    assert COMPOSITION.mask(["damage", "tank", "bard"]) == 0b101
    assert COMPOSITION.preferences(["damage", "tank", "damage"]) == (2, 0)
    inside = COMPOSITION.inside(np.array([0b101]))
    assert inside.shape == (1, 8)
    assert [bool(v) for v in inside[0]] == [s & 0b101 == 0b101 for s in range(8)]
    assert COMPOSITION.team_size == 5


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ({}, "1 to"),
        ({f"r{i}": 1 for i in range(MAX_ROLES + 1)}, "1 to"),
        ({"tank": 0, "damage": 2}, "at least one"),
    ],
)
def test_bad_compositions_are_refused(counts: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Composition.of(counts)
