"""Avoid lists: no match holds two tickets that avoid each other, at little cost in quality."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from app.matchmaking.avoid import Clashes, clashing_rows
from app.matchmaking.proposals import Composition, MatchShape, Proposal, Relaxation, Ticket, propose
from app.rating import Rating, TrueSkill

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 60.0)
SHAPES = [
    MatchShape(2, 1),
    MatchShape(2, 2),
    MatchShape(2, 5),
    MatchShape(8, 1),
    MatchShape(2, 5, composition=Composition.of({"tank": 1, "healer": 1, "damage": 3})),
]


def test_clashes_are_found_whoever_lists_whom() -> None:
    players = [("a",), ("b", "c"), ("d",), ("e",)]
    avoid = [("c",), (), ("a", "zz"), ("e",)]  # a avoids c; d avoids a and an absent player; e itself
    pairs = clashing_rows(players, avoid)
    assert pairs.tolist() == [[0, 1], [0, 2]]
    clashes = Clashes(pairs, 4)
    assert clashes.between(np.array([1, 2, 3]), np.array([0, 0, 1])).tolist() == [True, True, False]
    assert clashes.within([1, 3, 2]) is False
    assert clashes.within([3, 2, 0]) is True


@pytest.mark.parametrize("seed", range(20))
def test_windows_with_a_clash_are_those_brute_force_finds(seed: int) -> None:
    rng = random.Random(seed)
    rows = np.array(rng.sample(range(60), 40), dtype=np.int64)
    pairs = sorted({tuple(sorted(rng.sample(range(60), 2))) for _ in range(8)})
    clashes = Clashes(np.array(pairs, dtype=np.int64), 60)
    width = rng.randint(2, 8)
    expected = [
        any(tuple(sorted(p)) in pairs for p in itertools.combinations(rows[s : s + width].tolist(), 2))
        for s in range(len(rows) - width + 1)
    ]
    assert clashes.windows(rows, width).tolist() == expected


def avoiding_pool(
    rng: random.Random, count: int, near: bool, roles: bool
) -> tuple[list[Ticket], dict[str, str]]:
    """Solo tickets; 5% of players avoid one other queued player: a random one, or the next in skill."""
    ratings = [Rating(rng.uniform(5, 45), rng.uniform(1, 8)) for _ in range(count)]
    order = sorted(range(count), key=lambda i: ratings[i].mu)
    rank = {player: k for k, player in enumerate(order)}
    avoid: dict[str, str] = {}
    for i in rng.sample(range(count), count // 20):
        if near:
            k = rank[i]
            j = order[k + 1] if k + 1 < count else order[k - 1]
        else:
            j = rng.choice([x for x in range(count) if x != i])
        avoid[f"p{i}"] = f"p{j}"
    tickets = []
    for i in range(count):
        listed = None
        if roles:
            listed = ((*(r for r, p in (("tank", 0.2), ("healer", 0.15)) if rng.random() < p), "damage"),)
        avoided = (avoid[f"p{i}"],) if f"p{i}" in avoid else ()
        tickets.append(Ticket(f"t{i}", (f"p{i}",), (ratings[i],), "{}", 0.0, roles=listed, avoid=avoided))
    return tickets, avoid


def met(proposal: Proposal, avoid: dict[str, str]) -> bool:
    present = {p for team in proposal.teams for p in team}
    return any(a in present and b in present for a, b in avoid.items())


@pytest.mark.parametrize(
    "shape", SHAPES, ids=lambda s: f"{s.teams}x{s.team_size}{'r' if s.composition else ''}"
)
@pytest.mark.parametrize("near", [False, True])
def test_no_match_holds_players_who_avoid_each_other_and_quality_hardly_moves(
    shape: MatchShape, near: bool
) -> None:
    rng = random.Random(3 + near)
    tickets, avoid = avoiding_pool(rng, 1000, near, shape.composition is not None)
    made = propose(tickets, shape, ENV, OPEN, 10_000)
    assert not any(met(p, avoid) for p in made)
    plain = [
        Ticket(t.ticket_id, t.players, t.ratings, t.attributes, t.waited, roles=t.roles) for t in tickets
    ]
    free = propose(plain, shape, ENV, OPEN, 10_000)
    assert any(met(p, avoid) for p in free) or not near  # the lists bind
    assert len(made) >= len(free) - 1
    assert np.mean([p.quality for p in made]) >= 0.99 * np.mean([p.quality for p in free])


def test_parties_are_never_placed_with_a_ticket_they_avoid() -> None:
    rng = random.Random(9)
    tickets = []
    for i in range(200):
        size = rng.choice([1, 1, 2, 3])
        players = tuple(f"p{i}-{k}" for k in range(size))
        avoid = (f"p{i + 1}-0",) if i % 4 == 0 else ()
        ratings = tuple(Rating(rng.uniform(20, 30), 3.0) for _ in range(size))
        tickets.append(Ticket(f"t{i}", players, ratings, "{}", 0.0, avoid=avoid))
    ticket_of = {p: t for t in tickets for p in t.players}
    made = propose(tickets, MatchShape(2, 4), ENV, OPEN, 100)
    assert len(made) >= 15
    for proposal in made:
        present = {p for team in proposal.teams for p in team}
        for player in present:
            assert not set(ticket_of[player].avoid) & present
