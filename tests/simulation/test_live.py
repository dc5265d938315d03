"""The live clock against a running service: tickets, long-polls, matchmake and match posts
over HTTP, with nothing lost."""

from __future__ import annotations

import secrets

import pytest

from app.client import AsyncClient
from app.simulation.live import LiveRun, _read_ratings
from app.simulation.population import Streams, build
from app.simulation.record import DECLINED, MATCHED
from tests.conftest import ADMIN_KEY
from tests.simulation.helpers import scenario

pytestmark = pytest.mark.slow

REGIONS = [
    {"name": "eu", "share": 0.6, "latency_ms": 30, "latency_sd_ms": 5, "others": {"na": 80}},
    {"name": "na", "share": 0.4, "latency_ms": 35, "latency_sd_ms": 5, "others": {"eu": 80}},
]


async def leaderboard(url: str, mode: str) -> dict[str, tuple[float, float, int]]:
    async with AsyncClient(url, ADMIN_KEY) as api:
        page = await api.get_leaderboard(mode, limit=500)
    return {e.player_id: (e.rating.mu, e.rating.sigma, e.matches) for e in page.entries}


async def test_a_short_live_run_loses_nothing_and_mirrors_the_services_ratings(live_server: str) -> None:
    short = scenario(
        "live",
        duration="12s",
        population={"size": 40},
        arrivals={"players_per_second": 1.0, "initial_share": 0.6},
        sessions={"matches": 5, "fixed": False, "pause_seconds": 0.2, "match_seconds": 1.0},
        parties={"1": 0.8, "2": 0.2},
        regions=REGIONS,
        mode={
            "teams": 2,
            "team_size": 2,
            "relax_seconds": 2,
            "max_latency_ms": 60,
            "max_latency_relaxed_ms": 150,
        },
        matchmaker={"interval_seconds": 0.1},
    )
    players = build(short, Streams.of(short.seed).population)
    live = LiveRun(short, players, live_server, ADMIN_KEY)
    run = await live.run()
    assert run.clock == "live"
    assert run.errors == ()
    assert run.lost_results == 0
    # Some matches, not a rate: a loaded machine played only 8 in the 12 s.
    assert run.matches >= 3
    assert int(run.games.sum()) == 4 * run.matches
    matched = run.ticket_outcome == MATCHED
    assert int(run.ticket_players[matched].sum()) == 4 * run.matches
    # The run's ratings are the service's, player by player.
    held = await leaderboard(live_server, live.mode)
    for number, player in enumerate(live.ids):
        if run.games[number]:
            mu, sigma, count = held[player]
            assert (mu, sigma, count) == (
                pytest.approx(float(run.mu[number])),
                pytest.approx(float(run.sigma[number])),
                int(run.games[number]),
            )
    assert set(run.match_region.tolist()) <= {0, 1}

    # A population read from that mode starts, on a new mode, from those ratings.
    rated = await _read_ratings(live_server, ADMIN_KEY, live.mode)
    assert sorted(rated) == sorted((mu, sigma) for mu, sigma, _ in held.values())
    again = scenario(
        "again",
        duration="2s",
        population={"size": 5, "from_mode": live.mode},
        arrivals={"players_per_second": 1e-6, "initial_share": 0.0},
    )
    seeded = build(again, Streams.of(again.seed).population, rated)
    second = LiveRun(again, seeded, live_server, ADMIN_KEY)
    rerun = await second.run()
    assert (rerun.errors, rerun.lost_results, rerun.matches) == ((), 0, 0)
    now = await leaderboard(live_server, second.mode)
    assert [now[player][:2] for player in second.ids] == [
        (pytest.approx(mu), pytest.approx(sigma))
        for mu, sigma in zip(seeded.mu.tolist(), seeded.sigma.tolist(), strict=True)
    ]


async def test_a_short_live_role_queue_seats_players_in_roles_they_accept_and_loses_nothing(
    live_server: str,
) -> None:
    roles = scenario(
        "live-roles",
        duration="10s",
        population={
            "size": 40,
            "roles": [
                {"accepts": ["tank"], "share": 0.3},
                {"accepts": ["damage"], "share": 0.4},
                {"accepts": ["damage", "tank"], "share": 0.3},
            ],
            "avoid_probability": 0.5,
            "avoid_list": 5,
        },
        arrivals={"players_per_second": 1.0, "initial_share": 0.6},
        sessions={"matches": 5, "fixed": False, "pause_seconds": 0.2, "match_seconds": 1.0},
        parties={"1": 0.8, "2": 0.2},
        mode={"teams": 2, "team_size": 2, "roles": {"tank": 1, "damage": 1}, "relax_seconds": 2},
        matchmaker={"interval_seconds": 0.1},
    )
    players = build(roles, Streams.of(roles.seed).population)
    live = LiveRun(roles, players, live_server, ADMIN_KEY)
    run = await live.run()
    assert run.errors == ()
    assert run.lost_results == 0
    assert run.matches >= 5
    assert run.roles == ("tank", "damage")
    assert int(run.games.sum()) == 4 * run.matches
    solo = (run.ticket_outcome == MATCHED) & (run.ticket_players == 1)
    # The service seated every solo player; tank first is tank only in this mix.
    assert (run.ticket_seated[solo] >= 0).all()
    assert (run.ticket_seated[solo & (run.ticket_role == 0)] == 0).all()
    # Avoid lists grew from play and went out on the tickets the service accepted.
    assert any(live.state.avoid.lists)
    held = await leaderboard(live_server, live.mode)
    assert sum(count for _, _, count in held.values()) == 4 * run.matches


async def test_a_short_live_free_for_all_plays_and_rates_its_smaller_matches(live_server: str) -> None:
    ffa = scenario(
        "live-ffa",
        duration="10s",
        population={"size": 14},
        arrivals={"players_per_second": 0.5, "initial_share": 0.5},
        sessions={"matches": 5, "fixed": False, "pause_seconds": 0.3, "match_seconds": 1.0},
        mode={
            "teams": 8,
            "team_size": 1,
            "teams_min": 3,
            "relax_seconds": 2,
            "quality_start": 0.0,
            "quality_floor": 0.0,
        },
        matchmaker={"interval_seconds": 0.1},
    )
    players = build(ffa, Streams.of(ffa.seed).population)
    live = LiveRun(ffa, players, live_server, ADMIN_KEY)
    run = await live.run()
    assert run.errors == ()
    assert run.lost_results == 0
    assert run.matches >= 3
    assert min(run.match_players.tolist()) >= 3
    assert set(run.match_players.tolist()) - {8}
    assert int(run.games.sum()) == int(run.match_players.sum())
    held = await leaderboard(live_server, live.mode)
    assert sum(count for _, _, count in held.values()) == int(run.match_players.sum())


async def test_a_short_live_run_with_leavers_backfills_their_games_and_loses_nothing(
    live_server: str,
) -> None:
    leaving = scenario(
        "live-leave",
        duration="12s",
        population={"size": 40},
        arrivals={"players_per_second": 1.0, "initial_share": 0.6},
        sessions={
            "matches": 5,
            "fixed": False,
            "pause_seconds": 0.2,
            "match_seconds": 2.0,
            "leave_probability": 0.3,
        },
        parties={"1": 0.8, "2": 0.2},
        mode={"teams": 2, "team_size": 2, "relax_seconds": 2},
        matchmaker={"interval_seconds": 0.1},
    )
    players = build(leaving, Streams.of(leaving.seed).population)
    live = LiveRun(leaving, players, live_server, ADMIN_KEY)
    run = await live.run()
    assert run.errors == ()
    assert run.lost_results == 0
    assert run.leaving and run.backfill
    assert run.leavers > 0
    assert 0 < run.games_left <= run.matches
    assert run.seats_opened == run.leavers
    # Some seats were filled through the service's backfills, each from a matched ticket.
    assert len(run.fill_wait) > 0
    assert len(run.fill_quality) > 0
    matched = run.ticket_outcome == MATCHED
    assert int(run.ticket_players[matched].sum()) >= int(run.match_players.sum())
    assert int(run.games.sum()) == int(run.match_players.sum())
    # The service rated every player of every game, leavers and fillers with their partial
    # play, as the run mirrored it.
    held = await leaderboard(live_server, live.mode)
    for number, player in enumerate(live.ids):
        if run.games[number]:
            mu, sigma, count = held[player]
            assert (mu, sigma, count) == (
                pytest.approx(float(run.mu[number])),
                pytest.approx(float(run.sigma[number])),
                int(run.games[number]),
            )


async def warm_up(url: str) -> None:
    """One proposal answered on a mode of its own, before a run that counts proposals: a server
    process's first matchmaking call and answers cost it seconds on a loaded machine (a cold
    first call was seen to take half of a 12 s run, and the run to see no proposal at all)."""
    mode = f"warm-{secrets.token_hex(3)}"
    async with AsyncClient(url, ADMIN_KEY) as api:
        await api.put_mode(
            mode, teams=2, team_size=1, quality_start=0.0, quality_floor=0.0, accept_timeout_s=5
        )
        for player in ("w1", "w2"):
            await api.create_ticket(mode, {"players": [f"{mode}-{player}"]})
        (proposal,) = (await api.matchmake(mode)).matches
        await api.decline_proposal(mode, proposal.proposal_id, [proposal.teams[0][0]])


async def test_a_short_live_run_with_declines_answers_every_proposal_and_loses_nothing(
    live_server: str,
) -> None:
    await warm_up(live_server)
    declining = scenario(
        "live-ready",
        duration="12s",
        population={"size": 40},
        arrivals={"players_per_second": 1.0, "initial_share": 0.6},
        sessions={
            "matches": 5,
            "fixed": False,
            "pause_seconds": 0.2,
            "match_seconds": 1.0,
            "decline_probability": 0.2,
        },
        mode={"teams": 2, "team_size": 1, "relax_seconds": 2, "accept_timeout_s": 5},
        matchmaker={"interval_seconds": 0.1},
    )
    players = build(declining, Streams.of(declining.seed).population)
    live = LiveRun(declining, players, live_server, ADMIN_KEY)
    run = await live.run()
    assert run.errors == ()
    assert run.lost_results == 0
    assert run.ready_check
    # The 24 players online at the start alone make 12 proposals; a fifth of players decline.
    assert run.proposals >= 12
    assert run.proposals_failed >= 1
    # Every proposal the players answered was either played (accepted) or failed.
    assert run.proposals == run.matches + run.proposals_failed
    assert (run.ticket_outcome == DECLINED).sum() >= run.proposals_failed
    assert int(run.games.sum()) == 2 * run.matches
    held = await leaderboard(live_server, live.mode)
    assert sum(count for _, _, count in held.values()) == 2 * run.matches
    # The tickets a decline put back in the queue kept waiting, and say how they left.
    assert len(run.requeued_extra_wait) >= 1
    assert (run.requeued_extra_wait >= 0).all()
