"""Forming matches from a pool of columns: exact splits, groups kept apart, parties, limits."""

from __future__ import annotations

import random

import numpy as np
import pytest

from app.matchmaking.balance import EXACT_LIMIT, balance
from app.matchmaking.pool import Pool, Ticket
from app.matchmaking.proposals import MatchShape, Relaxation, form_matches, propose
from app.matchmaking.quality import pair_quality, team_quality
from app.matchmaking.scoring import SPLIT_LIMIT, split_count, split_patterns
from app.rating import Rating, TrueSkill, quality_1vs1

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 1.0)


def solo_tickets(rng: random.Random, count: int, attributes: str = "{}") -> list[Ticket]:
    return [
        Ticket(
            f"t{i}",
            (f"p{i}",),
            (Rating(rng.uniform(0, 50), rng.uniform(0.5, 8)),),
            attributes,
            rng.uniform(0, 9),
        )
        for i in range(count)
    ]


@pytest.mark.parametrize(("teams", "size"), [(2, 2), (2, 3), (2, 5), (3, 2), (3, 3), (4, 2), (8, 1)])
def test_every_split_is_listed_once(teams: int, size: int) -> None:
    patterns = split_patterns(teams, size)
    assert patterns is not None
    assert len(patterns) == split_count(teams, size)
    # Relabelling teams by first appearance gives each split one canonical row.
    canonical = {tuple(np.unique(row, return_index=True)[1].argsort().argsort()[row]) for row in patterns}
    assert len(canonical) == len(patterns)
    assert all((np.bincount(row, minlength=teams) == size).all() for row in patterns)


def test_shapes_with_too_many_splits_are_not_enumerated() -> None:
    assert split_count(4, 3) > SPLIT_LIMIT
    assert split_patterns(4, 3) is None


@pytest.mark.parametrize(("teams", "size"), [(2, 2), (2, 3), (2, 5), (3, 3), (4, 2), (8, 1), (4, 3), (2, 6)])
def test_each_match_carries_the_exact_best_split_of_its_players(teams: int, size: int) -> None:
    rng = random.Random(teams * 10 + size)
    tickets = solo_tickets(rng, 120)
    made = propose(tickets, MatchShape(teams, size), ENV, OPEN, max_matches=6)
    assert len(made) == 6
    by_player = {t.players[0]: t.ratings[0] for t in tickets}
    for proposal in made:
        players = [p for team in proposal.teams for p in team]
        assert sorted(len(team) for team in proposal.teams) == [size] * teams
        ratings = [by_player[p] for p in players]
        assert len(ratings) <= EXACT_LIMIT
        best = balance(ratings, teams, env=ENV)
        assert proposal.quality == pytest.approx(best.quality, rel=1e-12)
        assert proposal.quality == pytest.approx(
            ENV.quality([[by_player[p] for p in team] for team in proposal.teams]), rel=1e-12
        )


def test_a_shape_above_the_exact_limit_is_balanced_by_the_heuristic() -> None:
    rng = random.Random(3)
    tickets = solo_tickets(rng, 200)
    made = propose(tickets, MatchShape(2, 8), ENV, OPEN, max_matches=4)
    by_player = {t.players[0]: t.ratings[0] for t in tickets}
    assert len(made) == 4
    for proposal in made:
        assert [len(team) for team in proposal.teams] == [8, 8]
        assert proposal.quality == pytest.approx(
            ENV.quality([[by_player[p] for p in team] for team in proposal.teams]), rel=1e-12
        )


def test_team_quality_is_equation_7_for_any_number_of_teams() -> None:
    rng = random.Random(4)
    for teams in (2, 3, 5):
        groups = [
            [Rating(rng.uniform(0, 50), rng.uniform(0.5, 8)) for _ in range(rng.randint(1, 4))]
            for _ in range(teams)
        ]
        beta2 = ENV.beta**2
        mu = np.array([sum(r.mu for r in g) for g in groups])
        spread = np.array([sum(r.sigma**2 + beta2 for r in g) for g in groups])
        players = np.array([float(len(g)) for g in groups])
        assert float(team_quality(mu, spread, players, beta2)) == pytest.approx(
            ENV.quality(groups), rel=1e-12
        )
    a, b = Rating(20, 3), Rating(24, 6)
    pair = pair_quality(
        np.array([a.mu]), np.array([a.sigma**2]), np.array([b.mu]), np.array([b.sigma**2]), beta2
    )
    assert float(pair[0]) == pytest.approx(quality_1vs1(a, b, env=ENV), rel=1e-13)


@pytest.mark.parametrize(("teams", "size"), [(2, 1), (2, 2), (2, 5), (8, 1)])
def test_tickets_of_different_groups_never_share_a_match(teams: int, size: int) -> None:
    # Two regions interleaved in skill: neighbours by skill are mostly of the other region.
    rng = random.Random(5)
    tickets = [
        Ticket(
            f"t{i}",
            (f"p{i}",),
            (Rating(i * 0.1, rng.uniform(0.5, 8)),),
            '{"r":"eu"}' if i % 2 else '{"r":"us"}',
            0.0,
        )
        for i in range(400)
    ]
    region = {t.ticket_id: t.attributes for t in tickets}
    made = propose(tickets, MatchShape(teams, size), ENV, OPEN, max_matches=10_000)
    # Pairs drain the pool; team windows taken greedily leave short gaps between them, whose
    # tickets stay queued for the next call.
    possible = 400 // (teams * size)
    assert len(made) >= (possible - 2 if teams * size == 2 else possible // 2)
    for proposal in made:
        assert len({region[t] for t in proposal.ticket_ids}) == 1


def test_draining_a_pool_pairs_everyone_the_threshold_allows_once() -> None:
    rng = random.Random(6)
    tickets = solo_tickets(rng, 501)
    made = propose(tickets, MatchShape(2, 1), ENV, OPEN, max_matches=10_000)
    claimed = [t for p in made for t in p.ticket_ids]
    assert len(claimed) == len(set(claimed)) == 500
    # Best first, and max_matches caps the count.
    assert [p.quality for p in made] == sorted((p.quality for p in made), reverse=True)
    assert len(propose(tickets, MatchShape(2, 1), ENV, OPEN, max_matches=7)) == 7


def test_no_match_falls_under_its_threshold_and_waiting_relaxes_it() -> None:
    rng = random.Random(7)
    relax = Relaxation(0.6, 0.2, 10.0)
    for teams, size in ((2, 1), (2, 3), (4, 1)):
        fresh = [
            Ticket(f"t{i}", (f"p{i}",), (Rating(rng.uniform(0, 60), rng.uniform(1, 8)),), "{}", 0.0)
            for i in range(200)
        ]
        made = propose(fresh, MatchShape(teams, size), ENV, relax, max_matches=1000)
        assert made and all(p.quality >= 0.6 for p in made)
        waited = [Ticket(t.ticket_id, t.players, t.ratings, t.attributes, 20.0) for t in fresh]
        relaxed = propose(waited, MatchShape(teams, size), ENV, relax, max_matches=1000)
        assert all(p.quality >= 0.2 for p in relaxed)
        assert len(relaxed) > len(made)


def test_parties_stay_together_and_fill_their_teams() -> None:
    rng = random.Random(8)
    tickets = []
    for i in range(300):
        size = rng.choice([1, 1, 1, 2, 3])
        ratings = tuple(Rating(rng.uniform(0, 50), rng.uniform(0.5, 8)) for _ in range(size))
        tickets.append(Ticket(f"t{i}", tuple(f"p{i}-{k}" for k in range(size)), ratings, "{}", 0.0))
    ticket_of = {p: t.ticket_id for t in tickets for p in t.players}
    by_player = {p: r for t in tickets for p, r in zip(t.players, t.ratings, strict=True)}
    made = propose(tickets, MatchShape(2, 5), ENV, OPEN, max_matches=20)
    assert len(made) == 20
    for proposal in made:
        assert [len(team) for team in proposal.teams] == [5, 5]
        for team in proposal.teams:
            for other in proposal.teams:
                if other is not team:
                    assert not {ticket_of[p] for p in team} & {ticket_of[p] for p in other}
        assert proposal.quality == pytest.approx(
            ENV.quality([[by_player[p] for p in team] for team in proposal.teams]), rel=1e-12
        )
    claimed = [t for p in made for t in p.ticket_ids]
    assert len(claimed) == len(set(claimed))


def test_a_ticket_bigger_than_a_team_waits() -> None:
    big = Ticket("big", ("a", "b", "c"), (Rating(), Rating(), Rating()), "{}", 0.0)
    solo = [Ticket(f"s{i}", (f"s{i}",), (Rating(),), "{}", 0.0) for i in range(4)]
    made = propose([big, *solo], MatchShape(2, 2), ENV, OPEN, max_matches=5)
    assert [sorted(p.ticket_ids) for p in made] == [["s0", "s1", "s2", "s3"]]


def test_columns_and_ticket_objects_form_the_same_matches() -> None:
    rng = random.Random(9)
    tickets = solo_tickets(rng, 300)
    pool = Pool.of(tickets)
    for teams, size in ((2, 1), (2, 5), (3, 2)):
        by_rows = form_matches(pool, MatchShape(teams, size), ENV.beta, OPEN, 10)
        by_tickets = propose(tickets, MatchShape(teams, size), ENV, OPEN, 10)
        assert [tuple(pool.ids[r] for r in m.rows) for m in by_rows] == [p.ticket_ids for p in by_tickets]
