"""Match sizes that shrink with the wait: full size first, the minimum by relax_seconds."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

from app.matchmaking.proposals import MatchShape, Relaxation, Ticket, propose
from app.matchmaking.quality import team_log_quality
from app.rating import Rating, TrueSkill

ENV = TrueSkill()


def solo(rng: random.Random, count: int, waited: float, prefix: str = "t") -> list[Ticket]:
    return [
        Ticket(
            f"{prefix}{i}", (f"{prefix}{i}",), (Rating(rng.uniform(5, 45), rng.uniform(1, 8)),), "{}", waited
        )
        for i in range(count)
    ]


def test_the_accepted_size_falls_linearly_from_full_to_the_minimum() -> None:
    shape = MatchShape(100, 1, teams_min=60)
    accepted = shape.accepted(np.array([0.0, 15.0, 30.0, 59.0, 60.0, 600.0]), 60.0)
    assert accepted.tolist() == [100, 90, 80, 61, 60, 60]
    assert MatchShape(2, 5, team_size_min=3).minimum == 6
    assert MatchShape(2, 5, team_size_min=3).smaller(9, 6) == [(2, 4), (2, 3)]
    assert MatchShape(2, 5).accepted(np.array([1e9]), 60.0).tolist() == [10]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"teams": 4, "team_size": 1, "teams_min": 5}, "teams_min"),
        ({"teams": 2, "team_size": 5, "team_size_min": 6}, "team_size_min"),
        ({"teams": 4, "team_size": 1, "teams_min": 1}, "teams_min"),
    ],
)
def test_crossed_minimums_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MatchShape(**kwargs)


def test_a_match_forms_at_full_size_when_it_can_and_shrinks_only_with_the_wait() -> None:
    rng = random.Random(1)
    shape = MatchShape(100, 1, teams_min=60)
    relax = Relaxation(0.0, 0.0, 60.0)
    # 130 fresh tickets: one full match, the other 30 wait.
    made = propose(solo(rng, 130, 0.0), shape, ENV, relax, 10)
    assert [len(p.ticket_ids) for p in made] == [100]
    # 70 tickets that waited 30 s accept 80 players at least: none forms; at 45 s, 70 do.
    assert propose(solo(rng, 70, 30.0), shape, ENV, relax, 10) == []
    (made_70,) = propose(solo(rng, 70, 45.0), shape, ENV, relax, 10)
    assert len(made_70.ticket_ids) == 70
    # Team games that may start short: 5v5 down to 3v3.
    team_shape = MatchShape(2, 5, team_size_min=3)
    (short,) = propose(solo(rng, 8, 60.0), team_shape, ENV, relax, 10)
    assert [len(team) for team in short.teams] == [4, 4]
    assert propose(solo(rng, 8, 0.0), team_shape, ENV, relax, 10) == []


def test_squads_shrink_by_their_players_not_their_tickets() -> None:
    """Found by the simulator's battle royale (docs/scenarios/br.toml): 65 players on 25
    tickets (squads of four and two, and solos) make a lobby of 15 squads or more once the
    wait accepts one, though they are fewer tickets than the 60 players it needs."""
    rng = random.Random(0)
    sizes = [4] * 10 + [2] * 10 + [1] * 5
    tickets = [
        Ticket(
            f"s{i}",
            tuple(f"s{i}-{k}" for k in range(size)),
            tuple(Rating(rng.uniform(20, 30), 3.0) for _ in range(size)),
            "{}",
            200.0,
        )
        for i, size in enumerate(sizes)
    ]
    shape = MatchShape(25, 4, teams_min=15)
    (lobby,) = propose(tickets, shape, ENV, Relaxation(0.0, 0.0, 120.0), 10)
    assert 15 <= len(lobby.teams) <= 16
    assert all(len(team) == 4 for team in lobby.teams)
    assert (
        propose([replace(t, waited=0.0) for t in tickets], shape, ENV, Relaxation(0.0, 0.0, 120.0), 10) == []
    )


def test_a_hundred_teams_score_in_logs_where_the_quality_underflows() -> None:
    rng = np.random.default_rng(3)
    teams = 200
    mu, spread = rng.uniform(0, 100, teams), rng.uniform(20, 80, teams)
    log_q = float(team_log_quality(mu, spread, np.ones(teams), 17.0))
    assert log_q < -745  # below the smallest double: exp() of it is 0
    # The same formula on few teams matches the environment's quality.
    ratings = [[Rating(25.0, 3.0)], [Rating(27.0, 4.0)], [Rating(22.0, 2.0)]]
    beta2 = ENV.beta**2
    three = team_log_quality(
        np.array([25.0, 27.0, 22.0]), np.array([9.0, 16.0, 4.0]) + beta2, np.ones(3), beta2
    )
    assert float(np.exp(three)) == pytest.approx(ENV.quality(ratings), rel=1e-12)
    # A free-for-all of 200 still ranks its windows and forms.
    pool = solo(random.Random(4), 450, 0.0)
    made = propose(pool, MatchShape(200, 1), ENV, Relaxation(0.0, 0.0, 60.0), 10)
    assert [len(p.ticket_ids) for p in made] == [200, 200]


def simulate(shape: MatchShape, relax_seconds: float, horizon: float, seed: int) -> tuple[int, int]:
    """Tickets arrive at a tenth of the rate full matches need (a full match per ten relax
    periods); the matcher runs every second. Returns (tickets that could form a minimum-size
    match within relax_seconds of arriving, those of them matched by then)."""
    rng = random.Random(seed)
    rate = shape.players / (10 * relax_seconds)
    arrivals = []
    clock = 0.0
    while clock < horizon:
        clock += rng.expovariate(rate)
        arrivals.append(clock)
    relax = Relaxation(0.0, 0.0, relax_seconds)
    waiting: dict[str, tuple[float, Rating]] = {}
    matched_at: dict[str, float] = {}
    crowded: dict[str, float] = {}  # when a ticket first waited among at least minimum tickets
    arrived = 0
    now = 0.0
    while now < horizon + 2 * relax_seconds:
        while arrived < len(arrivals) and arrivals[arrived] <= now:
            waiting[f"t{arrived}"] = (arrivals[arrived], Rating(rng.uniform(5, 45), rng.uniform(1, 8)))
            arrived += 1
        if len(waiting) >= shape.minimum:
            for ticket_id in waiting:
                crowded.setdefault(ticket_id, now)
        tickets = [Ticket(i, (i,), (r,), "{}", now - at, ()) for i, (at, r) in waiting.items()]
        for proposal in propose(tickets, shape, ENV, relax, 100):
            for ticket_id in proposal.ticket_ids:
                matched_at[ticket_id] = now
                del waiting[ticket_id]
        now += 1.0
    could = [f"t{n}" for n, at in enumerate(arrivals) if crowded.get(f"t{n}", np.inf) <= at + relax_seconds]
    met = [t for t in could if matched_at.get(t, np.inf) <= arrivals[int(t[1:])] + relax_seconds + 1.0]
    return len(could), len(met)


@pytest.mark.parametrize(
    ("shape", "relax_seconds"),
    [
        (MatchShape(100, 1, teams_min=50), 60.0),
        (MatchShape(2, 5, team_size_min=3), 30.0),
        (MatchShape(16, 2, teams_min=4), 30.0),
    ],
)
def test_under_a_thin_queue_nine_in_ten_who_could_play_short_do_within_relax_seconds(
    shape: MatchShape, relax_seconds: float
) -> None:
    could, met = simulate(shape, relax_seconds, horizon=3000.0, seed=5)
    assert could >= 20
    assert met >= 0.9 * could
