"""Backfill fills: every open slot, parties whole, at least 99% of the best fill's quality (found
by exhaustive search on small pools), the threshold relaxing with the backfill's age."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from app.matchmaking.backfill import Opening, completed_log_quality, fill_backfills
from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import Pool, Ticket
from app.matchmaking.quality import Relaxation
from app.rating import Rating, TrueSkill

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 1.0)


def opening(teams: list[list[Rating]], team_size: int, group: int = 0, age: float = 0.0) -> Opening:
    return Opening(
        np.array([sum(r.mu for r in team) for team in teams]),
        np.array([sum(r.sigma * r.sigma for r in team) for team in teams]),
        np.array([len(team) for team in teams], dtype=np.int64),
        np.array([team_size - len(team) for team in teams], dtype=np.int64),
        group,
        None,
        age,
    )


def tickets_of(rng: random.Random, count: int, duos: float) -> list[Ticket]:
    tickets = []
    for number in range(count):
        size = 2 if rng.random() < duos else 1
        ratings = tuple(Rating(rng.gauss(25, 6), rng.uniform(1, 8)) for _ in range(size))
        tickets.append(Ticket(f"t{number}", tuple(f"t{number}-{i}" for i in range(size)), ratings, "{}", 1.0))
    return tickets


def exhaustive_best(slot: Opening, pool: Pool, beta2: float) -> float:
    """The best completed match's log quality over every assignment of tickets to teams that
    fills every open slot exactly (-inf when none does)."""
    teams = len(slot.open)
    best = -np.inf
    for assignment in itertools.product(range(-1, teams), repeat=len(pool)):
        added = np.zeros((3, teams))
        for row, team in enumerate(assignment):
            if team >= 0:
                added[:, team] += (pool.mu[row], pool.var[row], pool.size[row])
        if not np.array_equal(added[2], slot.open):
            continue
        score = completed_log_quality(slot, added[0][None], added[1][None], added[2][None], beta2)[0]
        best = max(best, float(score))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_each_fill_is_within_one_percent_of_the_exhaustive_best(seed: int) -> None:
    rng = random.Random(seed)
    team_size = rng.choice([3, 4, 5])
    teams = rng.choice([2, 2, 3])
    roster = [
        [Rating(rng.gauss(25, 6), rng.uniform(1, 8)) for _ in range(rng.randint(1, team_size))]
        for _ in range(teams)
    ]
    if sum(team_size - len(team) for team in roster) == 0:
        roster[0].pop()
    slot = opening(roster, team_size)
    pool = Pool.of(tickets_of(rng, 9 if teams == 2 else 7, duos=0.3))
    best = exhaustive_best(slot, pool, ENV.beta**2)
    (fill,) = fill_backfills(pool, [slot], ENV.beta, OPEN)
    if best == -np.inf:
        assert fill is None
        return
    assert fill is not None
    for team, rows in enumerate(fill.teams):
        assert int(pool.size[list(rows)].sum()) == slot.open[team]
    assert len(set(fill.rows)) == len(fill.rows)
    assert fill.quality >= 0.99 * np.exp(best)


def test_parties_stay_whole_on_one_team_and_a_fill_needs_every_slot() -> None:
    duo = Ticket("duo", ("d1", "d2"), (Rating(25, 3), Rating(25, 3)), "{}", 1.0)
    solo = Ticket("solo", ("s1",), (Rating(25, 3),), "{}", 1.0)
    # One open slot on each team: the duo fits on neither.
    slot = opening([[Rating(25, 3)] * 2, [Rating(25, 3)] * 2], 3)
    assert fill_backfills(Pool.of([duo, solo]), [slot], ENV.beta, OPEN) == [None]
    # Two open slots on the second team: the duo takes them whole.
    slot = opening([[Rating(25, 3)] * 3, [Rating(25, 3)]], 3)
    (fill,) = fill_backfills(Pool.of([duo, solo]), [slot], ENV.beta, OPEN)
    assert fill is not None and fill.teams == ((), (0,))


def test_the_threshold_relaxes_with_the_backfills_age() -> None:
    strong = [Rating(40, 2)] * 2
    weak = Ticket("weak", ("w",), (Rating(10, 2),), "{}", 1.0)
    relax = Relaxation(0.5, 0.0, 60.0)
    young = opening([strong, [Rating(40, 2)]], 2, age=0.0)
    old = opening([strong, [Rating(40, 2)]], 2, age=60.0)
    assert fill_backfills(Pool.of([weak]), [young], ENV.beta, relax) == [None]
    (fill,) = fill_backfills(Pool.of([weak]), [old], ENV.beta, relax)
    assert fill is not None and fill.quality < 0.5


def test_an_earlier_backfill_takes_its_tickets_out_of_reach_of_later_ones() -> None:
    tickets = [Ticket(f"t{i}", (f"p{i}",), (Rating(25, 3),), "{}", 1.0) for i in range(3)]
    slots = [opening([[Rating(25, 3)], [Rating(25, 3)] * 2], 2) for _ in range(4)]
    fills = fill_backfills(Pool.of(tickets), slots, ENV.beta, OPEN)
    assert [fill is not None for fill in fills] == [True, True, True, False]
    rows = [row for fill in fills if fill is not None for row in fill.rows]
    assert sorted(rows) == [0, 1, 2]


def test_only_tickets_of_the_backfills_group_and_region_fill_it() -> None:
    here = Ticket("here", ("h",), (Rating(25, 3),), '{"map":"a"}', 1.0, (("eu", 30.0),))
    far = Ticket("far", ("f",), (Rating(25, 3),), '{"map":"a"}', 1.0, (("eu", 300.0),))
    other = Ticket("other", ("o",), (Rating(25, 3),), '{"map":"b"}', 1.0)
    pool = Pool.of([far, other, here])
    group = int(pool.group[2])
    base = opening([[Rating(25, 3)], [Rating(25, 3)] * 2], 2, group=group)
    slot = Opening(base.mu, base.var, base.players, base.open, group, "eu", 0.0)
    rule = LatencyRule(start_ms=100.0, relaxed_ms=100.0, seconds=10.0)
    (fill,) = fill_backfills(pool, [slot], ENV.beta, OPEN, rule)
    assert fill is not None and fill.teams == ((2,), ())


def test_backfills_alike_all_fill_while_the_pool_has_tickets_past_their_neighbours() -> None:
    """Many backfills wanting the same skill: each takes the next free neighbours, not a window
    its predecessors emptied."""
    tickets = [Ticket(f"t{i}", (f"p{i}",), (Rating(25, 3),), "{}", 1.0) for i in range(200)]
    slots = [opening([[Rating(25, 3)] * 3, [Rating(25, 3)] * 4], 5) for _ in range(60)]
    fills = fill_backfills(Pool.of(tickets), slots, ENV.beta, OPEN)
    assert all(fill is not None for fill in fills)
    rows = [row for fill in fills if fill is not None for row in fill.rows]
    assert len(rows) == len(set(rows)) == 180


def exhaustive_solos(slot: Opening, pool: Pool, beta2: float) -> float:
    """exhaustive_best for pools of solos and two teams missing at most two players between
    them, with the assignments as arrays (every ticket or pair of tickets on a team)."""
    rows = np.arange(len(pool))
    per_team = []
    for team in range(2):
        need = int(slot.open[team])
        combos = list(itertools.combinations(rows, need))
        per_team.append(np.array(combos, dtype=np.int64).reshape(len(combos), need))
    first, second = (
        np.repeat(np.arange(len(per_team[0])), len(per_team[1])),
        np.tile(np.arange(len(per_team[1])), len(per_team[0])),
    )
    a, b = per_team[0][first], per_team[1][second]
    disjoint = ~(a[:, :, None] == b[:, None, :]).any(axis=(1, 2))
    a, b = a[disjoint], b[disjoint]
    added_mu = np.stack([pool.mu[a].sum(axis=1), pool.mu[b].sum(axis=1)], axis=1)
    added_var = np.stack([pool.var[a].sum(axis=1), pool.var[b].sum(axis=1)], axis=1)
    added_size = np.broadcast_to(slot.open.astype(np.float64), added_mu.shape)
    return float(completed_log_quality(slot, added_mu, added_var, added_size, beta2).max())


@pytest.mark.parametrize("tickets", [60, 400])
@pytest.mark.parametrize("seed", range(12))
def test_on_larger_pools_each_fill_is_within_one_percent_of_the_exhaustive_best(
    seed: int, tickets: int
) -> None:
    """Past the small pools the search is no longer exhaustive (the search of one backfill
    refines a first fill; on many free tickets the batched search sees only each team's
    nearest): its fills still reach 99% of the best."""
    rng = random.Random(1000 + seed)
    missing = [(1, 0), (0, 1), (2, 0), (0, 2), (1, 1)][seed % 5]
    roster = [[Rating(rng.gauss(25, 6), rng.uniform(1, 8)) for _ in range(5 - gap)] for gap in missing]
    slot = opening(roster, 5)
    pool = Pool.of(tickets_of(rng, tickets, duos=0.0))
    best = exhaustive_solos(slot, pool, ENV.beta**2)
    (fill,) = fill_backfills(pool, [slot], ENV.beta, OPEN)
    assert fill is not None
    assert [len(team) for team in fill.teams] == list(missing)
    assert fill.quality >= 0.99 * np.exp(best)
