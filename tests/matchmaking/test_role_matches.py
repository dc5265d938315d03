"""Matches under a composition: valid, as many as the roles allow, and near the best split."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from scipy.optimize import Bounds, LinearConstraint, milp

from app.matchmaking.proposals import Composition, MatchShape, Proposal, Relaxation, Ticket, propose
from app.rating import Rating, TrueSkill

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 60.0)
COMPOSITION = Composition.of({"tank": 1, "healer": 1, "damage": 3})
SHAPE = MatchShape(2, 5, composition=COMPOSITION)


def role_pool(rng: random.Random, count: int, exclusive: bool, spread: bool = True) -> list[Ticket]:
    """Solo tickets where 15% of players can heal and 20% can tank: either only that role
    (exclusive) or that role besides damage, which everyone else plays."""
    tickets = []
    for i in range(count):
        if exclusive:
            draw = rng.random()
            roles: tuple[str, ...] = ("healer",) if draw < 0.15 else ("tank",) if draw < 0.35 else ("damage",)
        else:
            extra = tuple(r for r, p in (("tank", 0.2), ("healer", 0.15)) if rng.random() < p)
            roles = (*extra, "damage")
        rating = Rating(rng.uniform(5, 45), rng.uniform(1, 8)) if spread else Rating(25, 25 / 3)
        tickets.append(Ticket(f"t{i}", (f"p{i}",), (rating,), "{}", 0.0, roles=(roles,)))
    return tickets


def role_valid(proposal: Proposal, accepted: dict[str, tuple[str, ...]]) -> bool:
    assert proposal.roles is not None
    for team in proposal.teams:
        if sorted(proposal.roles[p] for p in team) != ["damage", "damage", "damage", "healer", "tank"]:
            return False
    return all(role in accepted[p] for p, role in proposal.roles.items())


def most_role_matches(tickets: list[Ticket], teams: int = 2) -> int:
    """The most matches the players' roles allow, by integer programming (scipy's HiGHS):
    x[kind, role] players of each kind of accepted roles take each role, every role gets
    exactly M · teams · its count, maximise M."""
    kinds: dict[frozenset[str], int] = {}
    for ticket in tickets:
        assert ticket.roles is not None
        key = frozenset(ticket.roles[0])
        kinds[key] = kinds.get(key, 0) + 1
    names = list(COMPOSITION.roles)
    cells = [(k, r) for k, kind in enumerate(kinds) for r, role in enumerate(names) if role in kind]
    variables = len(cells) + 1  # the last is M
    rows, low, high = [], [], []
    for k, count in enumerate(kinds.values()):
        rows.append([1.0 if cell[0] == k else 0.0 for cell in cells] + [0.0])
        low.append(0)
        high.append(count)
    for r, count in enumerate(COMPOSITION.counts):
        rows.append([1.0 if cell[1] == r else 0.0 for cell in cells] + [-teams * count])
        low.append(0)
        high.append(0)
    objective = np.zeros(variables)
    objective[-1] = -1
    found = milp(
        objective,
        constraints=LinearConstraint(np.array(rows), low, high),
        integrality=np.ones(variables),
        bounds=Bounds(0, np.inf),
    )
    return round(-found.fun)


@pytest.mark.parametrize(("exclusive", "spread"), [(False, True), (True, True), (False, False)])
def test_a_1000_ticket_pool_forms_as_many_valid_matches_as_its_roles_allow(
    exclusive: bool, spread: bool
) -> None:
    rng = random.Random(31 + exclusive)
    tickets = role_pool(rng, 1000, exclusive, spread)
    accepted = {t.players[0]: t.roles[0] for t in tickets if t.roles}
    made = propose(tickets, SHAPE, ENV, OPEN, 10_000)
    assert all(role_valid(p, accepted) for p in made)
    claimed = [t for p in made for t in p.ticket_ids]
    assert len(claimed) == len(set(claimed))
    most = most_role_matches(tickets)
    assert most < 100  # the roles bind: without them the pool holds 100 matches
    assert len(made) >= 0.95 * most
    off = propose(
        [Ticket(t.ticket_id, t.players, t.ratings, t.attributes, t.waited) for t in tickets],
        MatchShape(2, 5),
        ENV,
        OPEN,
        10_000,
    )
    assert np.mean([p.quality for p in made]) >= 0.97 * np.mean([p.quality for p in off])


def best_role_split(ratings: dict[str, Rating], accepted: dict[str, tuple[str, ...]]) -> float:
    """Exhaustive: the best quality over every split of ten players into two teams of five
    whose every team has some assignment of the composition."""
    players = sorted(ratings)
    best = 0.0
    for team in itertools.combinations(players, 5):
        other = [p for p in players if p not in team]
        seated = all(
            any(
                sorted(choice) == ["damage", "damage", "damage", "healer", "tank"]
                and all(role in accepted[p] for p, role in zip(side, choice, strict=True))
                for choice in itertools.product(*(accepted[p] for p in side))
            )
            for side in (team, other)
        )
        if seated:
            best = max(best, ENV.quality([[ratings[p] for p in team], [ratings[p] for p in other]]))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_one_match_of_players_takes_the_best_role_valid_split(seed: int) -> None:
    rng = random.Random(seed)
    choices = [
        ("tank",),
        ("healer",),
        ("damage",),
        ("tank", "damage"),
        ("healer", "damage"),
        ("tank", "healer"),
    ]
    while True:
        accepted = {f"p{i}": rng.choice(choices) for i in range(10)}
        if best_role_split({p: Rating() for p in accepted}, accepted) > 0:
            break
    ratings = {p: Rating(rng.uniform(10, 40), rng.uniform(1, 8)) for p in accepted}
    tickets = [Ticket(f"t{p}", (p,), (ratings[p],), "{}", 0.0, roles=(accepted[p],)) for p in accepted]
    (made,) = propose(tickets, SHAPE, ENV, OPEN, 10)
    assert role_valid(made, accepted)
    assert made.quality >= 0.99 * best_role_split(ratings, accepted)
    assert made.quality == pytest.approx(
        ENV.quality([[ratings[p] for p in team] for team in made.teams]), rel=1e-12
    )


def test_parties_keep_together_and_fill_the_composition_as_a_unit() -> None:
    rng = random.Random(41)
    tickets = []
    for i in range(240):
        size = rng.choice([1, 1, 1, 2, 3])
        roles = tuple(
            rng.choice([("tank", "damage"), ("healer",), ("damage",), ("damage",)]) for _ in range(size)
        )
        ratings = tuple(Rating(rng.uniform(5, 45), rng.uniform(1, 8)) for _ in range(size))
        tickets.append(
            Ticket(f"t{i}", tuple(f"p{i}-{k}" for k in range(size)), ratings, "{}", 0.0, roles=roles)
        )
    accepted = {p: r for t in tickets for p, r in zip(t.players, t.roles or (), strict=True)}
    ticket_of = {p: t.ticket_id for t in tickets for p in t.players}
    made = propose(tickets, SHAPE, ENV, OPEN, 100)
    assert len(made) >= 10
    for proposal in made:
        assert role_valid(proposal, accepted)
        sides = [{ticket_of[p] for p in team} for team in proposal.teams]
        assert not sides[0] & sides[1]
    claimed = [t for p in made for t in p.ticket_ids]
    assert len(claimed) == len(set(claimed))


def test_tickets_that_list_no_roles_take_any_role() -> None:
    tickets = [Ticket(f"t{i}", (f"p{i}",), (Rating(),), "{}", 0.0) for i in range(10)]
    (made,) = propose(tickets, SHAPE, ENV, OPEN, 10)
    assert made.roles is not None
    assert sorted(made.roles.values()) == sorted(["tank", "healer", "damage", "damage", "damage"] * 2)
