"""The virtual clock: the service's matchmaking and rating on simulated time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from app.matchmaking.pool import Match
from app.simulation.record import DECLINED, EXPIRED, LEFT_AT_END, MATCHED
from app.simulation.scenario import Scenario
from app.simulation.virtual import VirtualClock, run_virtual
from tests.simulation.helpers import population, scenario


def columns(run: object) -> dict[str, object]:
    return {field.name: getattr(run, field.name) for field in dataclasses.fields(run)}  # type: ignore[arg-type]


def test_a_seed_gives_the_same_run_and_another_seed_another() -> None:
    first = scenario()
    one = run_virtual(first, population(first))
    two = run_virtual(first, population(first))
    for name, value in columns(one).items():
        if name == "wall_seconds":
            continue
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, columns(two)[name]), name
        else:
            assert value == columns(two)[name], name
    other = scenario(seed=8)
    three = run_virtual(other, population(other))
    assert not np.array_equal(one.skill, three.skill)
    assert one.matches != three.matches or not np.array_equal(one.match_quality, three.match_quality)


def test_every_ticket_leaves_once_and_every_match_is_played_out() -> None:
    tiny = scenario(mode={"teams": 2, "team_size": 2}, parties={"1": 0.7, "2": 0.3})
    run = run_virtual(tiny, population(tiny))
    assert run.matches > 50
    # Each match's four players played it, parties included.
    assert int(run.games.sum()) == 4 * run.matches
    matched = run.ticket_outcome == MATCHED
    assert int(run.ticket_players[matched].sum()) == 4 * run.matches
    assert set(np.unique(run.ticket_players).tolist()) == {1, 2}
    assert set(np.unique(run.ticket_outcome).tolist()) <= {MATCHED, EXPIRED, LEFT_AT_END}
    assert (run.ticket_waited >= 0).all()
    # Queued between two calls a second apart: no matched ticket waits less than nothing.
    assert (run.match_formed <= tiny.duration_seconds).all()


def test_the_loop_recovers_the_true_skills_and_predicts_its_draws() -> None:
    tiny = scenario()
    run = run_virtual(tiny, population(tiny))
    last = run.checkpoints[-1]
    assert last.games >= 20
    assert last.displayed > 0.9
    assert last.displayed > last.elo
    drawn = (run.match_outcome == 1).mean()
    assert 0.03 < drawn < 0.12  # the mode's draw probability, 0.1, is for equal players


def test_a_mode_too_strict_for_new_players_matches_nobody_and_their_tickets_expire() -> None:
    # New players (sigma 25/3) can reach a quality of at most sqrt(2β²/(2β² + 2σ²)) ≈ 0.45.
    strict = scenario(
        mode={"quality_start": 0.9, "quality_floor": 0.9, "ticket_ttl_seconds": 120},
        sessions={"matches": 1},
        duration="10m",
    )
    run = run_virtual(strict, population(strict))
    assert run.matches == 0
    assert (run.ticket_outcome == EXPIRED).all()
    assert len(run.ticket_outcome) == 100
    assert np.allclose(run.ticket_waited, 120.0)


def test_relaxation_lets_new_players_match_once_the_threshold_drops() -> None:
    relaxing = scenario(
        mode={"quality_start": 0.9, "quality_floor": 0.0, "relax_seconds": 100}, duration="10m"
    )
    run = run_virtual(relaxing, population(relaxing))
    first_round = run.ticket_enqueued == 0.0
    # Matched only when the threshold of their wait fell below their quality (at most ~0.45).
    assert (run.ticket_waited[first_round & (run.ticket_outcome == MATCHED)] >= 45.0).all()


def test_under_a_latency_rule_players_far_from_every_other_region_play_at_home() -> None:
    regions = [
        {"name": "eu", "share": 0.5, "latency_ms": 30, "latency_sd_ms": 5},
        {"name": "na", "share": 0.5, "latency_ms": 30, "latency_sd_ms": 5},
    ]
    ruled = scenario(regions=regions, mode={"max_latency_ms": 60})
    run = run_virtual(ruled, population(ruled))
    assert run.matches > 50
    matched = run.ticket_outcome == MATCHED
    # Tickets list only their home region, so every match is named for its players' home.
    for number in (0, 1):
        assert 2 * int((run.match_region == number).sum()) == int(
            (matched & (run.ticket_region == number)).sum()
        )
    assert (run.match_region >= 0).all()


def test_random_pairing_makes_worse_matches_than_the_quality_matchmaker() -> None:
    tiny = scenario()
    quality = run_virtual(tiny, population(tiny), "quality")
    random = run_virtual(tiny, population(tiny), "random")
    assert random.pairing == "random"
    assert random.matches > 50
    assert random.match_quality.mean() < quality.match_quality.mean() - 0.1
    with pytest.raises(ValueError, match="pairing must be one of"):
        run_virtual(tiny, population(tiny), "elo")


def test_arrivals_follow_the_daily_curve() -> None:
    # Simulated time 0 is 10 o'clock; nobody comes before noon.
    curve = [0.0] * 12 + [1.0] * 12
    daily = scenario(
        arrivals={"players_per_second": 0.02, "initial_share": 0.0, "daily_curve": curve, "start_hour": 10},
        sessions={"matches": 1, "fixed": True},
        duration="4h",
    )
    run = run_virtual(daily, population(daily))
    hours = run.ticket_enqueued // 3600
    assert len(hours) > 50
    assert (hours >= 2).all()


ROLE_MIX = [
    {"accepts": ["tank"], "share": 0.25},
    {"accepts": ["damage"], "share": 0.5},
    {"accepts": ["damage", "tank"], "share": 0.25},
]


def role_queue(**population: object) -> dict[str, object]:
    return {"size": 100, "roles": ROLE_MIX, **population}


def test_a_role_queue_seats_every_player_in_a_role_they_accept_and_repeats_with_its_seed() -> None:
    roles = scenario(
        population=role_queue(),
        mode={"teams": 2, "team_size": 2, "roles": {"tank": 1, "damage": 1}},
        parties={"1": 0.8, "2": 0.2},
    )
    one = run_virtual(roles, population(roles))
    two = run_virtual(roles, population(roles))
    for name, value in columns(one).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, columns(two)[name]), name
    assert one.roles == ("tank", "damage")
    assert one.matches > 50
    assert int(one.games.sum()) == 4 * one.matches
    solo = (one.ticket_outcome == MATCHED) & (one.ticket_players == 1)
    # Tank first means tank only in this mix: always seated as tank. Damage first includes
    # players who also accept tank, seated in either.
    assert (one.ticket_seated[solo & (one.ticket_role == 0)] == 0).all()
    assert set(one.ticket_seated[solo & (one.ticket_role == 1)].tolist()) <= {0, 1}
    assert (one.ticket_seated[solo] >= 0).all()
    assert (one.ticket_role[one.ticket_players == 2] == -1).all()
    # A party's mates can fill one team of tank + damage together: never two tank-only players.
    assert set(np.unique(one.ticket_players).tolist()) == {1, 2}


def pairs_met(run_scenario: Scenario) -> list[tuple[int, int]]:
    """Every 1v1 match's two players, in the order played."""
    clock = VirtualClock(run_scenario, population(run_scenario))
    met: list[tuple[int, int]] = []
    play = clock._play

    def recording(matches: list[Match], teams: int, size: int, now: float) -> None:
        sessions = clock.waiting.session
        for match in matches:
            a, b = (int(clock.sessions[int(sessions[team[0]])].players[0]) for team in match.teams)
            met.append((min(a, b), max(a, b)))
        play(matches, teams, size, now)

    clock._play = recording  # type: ignore[method-assign]
    clock.run()
    return met


def test_players_who_avoid_each_other_never_meet_again() -> None:
    # Twenty players, 1v1, for half an hour: without avoid lists the same pairs meet again.
    small = {"size": 20}
    again = pairs_met(scenario(population=small))
    assert len(set(again)) < len(again)
    # Everyone avoids their opponent after every match (lists long enough to keep them all).
    avoiding = scenario(population={**small, "avoid_probability": 1.0, "avoid_list": 100})
    met = pairs_met(avoiding)
    assert len(met) > 20
    assert len(set(met)) == len(met)


def test_a_free_for_all_shrinks_with_the_wait_and_each_size_is_played_and_rated() -> None:
    # Eight-player free-for-alls that may start with four; 30 players online, so lobbies of
    # eight rarely fill at once.
    ffa = scenario(
        population={"size": 30},
        mode={
            "teams": 8,
            "team_size": 1,
            "teams_min": 4,
            "relax_seconds": 30,
            "quality_start": 0.0,
            "quality_floor": 0.0,
        },
        sessions={
            "matches": 1000,
            "fixed": True,
            "pause_seconds": 20,
            "match_seconds": 60,
            "match_seconds_sd": 20,
        },
    )
    run = run_virtual(ffa, population(ffa))
    sizes = set(run.match_players.tolist())
    assert 8 in sizes
    assert sizes - {8}
    assert min(sizes) >= 4
    assert int(run.games.sum()) == int(run.match_players.sum())
    assert (run.match_outcome == -1).all()
    # The ratings still find the skills through matches of every size.
    assert run.checkpoints[-1].displayed > 0.8
    # Random pairing shrinks its matches by the same rule.
    random = run_virtual(ffa, population(ffa), "random")
    assert set(random.match_players.tolist()) - {8}
    assert min(random.match_players.tolist()) >= 4


READY = {"teams": 2, "team_size": 2, "accept_timeout_s": 10}


def test_a_ready_check_nobody_declines_plays_the_run_without_it() -> None:
    without = scenario(mode={"teams": 2, "team_size": 2}, parties={"1": 0.7, "2": 0.3})
    checked = scenario(mode=READY, parties={"1": 0.7, "2": 0.3}, sessions={"decline_probability": 0.0})
    plain, ready = run_virtual(without, population(without)), run_virtual(checked, population(checked))
    assert plain.matches > 50
    for name in ("match_formed", "match_quality", "match_outcome", "ticket_waited", "games", "mu", "sigma"):
        assert np.array_equal(columns(plain)[name], columns(ready)[name]), name  # type: ignore[arg-type]
    assert (ready.ready_check, ready.proposals, ready.proposals_failed) == (True, ready.matches, 0)
    assert not plain.ready_check
    assert len(ready.requeued_extra_wait) == 0


def test_declines_are_deterministic_for_a_seed() -> None:
    declining = scenario(mode=READY, parties={"1": 0.7, "2": 0.3}, sessions={"decline_probability": 0.05})
    one = run_virtual(declining, population(declining))
    two = run_virtual(declining, population(declining))
    assert one.proposals_failed > 0
    for name, value in columns(one).items():
        if name == "wall_seconds":
            continue
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, columns(two)[name], equal_nan=True), name
        else:
            assert value == columns(two)[name], name


class Watched(VirtualClock):
    """The virtual clock, noting each call's decliners and the players of the matches it plays."""

    def __init__(self, of: Scenario) -> None:
        super().__init__(of, population(of))
        self.declined: list[tuple[float, set[int]]] = []
        self.played: dict[float, set[int]] = {}

    def _ready_check(self, matches: list[Match], now: float) -> tuple[list[Match], np.ndarray]:  # type: ignore[type-arg]
        accepted, cancelled = super()._ready_check(matches, now)
        members = {p for row in cancelled.tolist() for p in self.waiting.members[row]}
        self.declined.append((now, members))
        return accepted, cancelled

    def _play(self, matches: list[Match], teams: int, size: int, now: float) -> None:
        sessions = self.waiting.session
        for match in matches:
            for row in match.rows:
                self.played.setdefault(now, set()).update(self.sessions[int(sessions[row])].players.tolist())
        super()._play(matches, teams, size, now)


def test_a_decliner_never_plays_the_match_it_declined_and_the_others_queue_again() -> None:
    declining = scenario(mode=READY, parties={"1": 0.7, "2": 0.3}, sessions={"decline_probability": 0.1})
    clock = Watched(declining)
    run = clock.run()
    assert run.proposals_failed > 0
    assert any(members for _, members in clock.declined)
    for now, members in clock.declined:
        assert not members & clock.played.get(now, set())
    # Every match's players played it, and no ticket both matched and was declined.
    assert int(run.games.sum()) == 4 * run.matches
    matched = run.ticket_outcome == MATCHED
    assert int(run.ticket_players[matched].sum()) == 4 * run.matches
    assert (run.ticket_outcome == DECLINED).sum() >= run.proposals_failed
    assert run.proposals == run.matches + run.proposals_failed
    # The tickets put back waited on: most were matched later, after some extra wait.
    assert len(run.requeued_extra_wait) > 0
    assert (run.requeued_extra_wait >= 0).all()
    assert (run.requeued_outcome == MATCHED).any()


def test_when_everyone_declines_no_match_is_played() -> None:
    refusing = scenario(mode=READY, sessions={"decline_probability": 1.0})
    run = run_virtual(refusing, population(refusing))
    assert run.proposals > 0
    assert run.proposals_failed == run.proposals
    assert run.matches == 0
    assert int(run.games.sum()) == 0
    assert set(run.ticket_outcome.tolist()) <= {DECLINED, EXPIRED, LEFT_AT_END}


LEAVING = {"leave_probability": 0.2}


class Leavers(VirtualClock):
    """The virtual clock, noting when each player left a game and when it ended, and every
    match start's players."""

    def __init__(self, of: Scenario) -> None:
        super().__init__(of, population(of))
        self.left: dict[int, list[float]] = {}
        self.over: dict[int, float] = {}
        self.started: list[tuple[float, set[int]]] = []

    def _leave_game(self, key: int, at: float) -> None:
        ref, seat = self.leaves[key]
        self.left.setdefault(self.games[ref].seats[seat].player, []).append(at)
        self.over[self.games[ref].seats[seat].player] = self.games[ref].ends
        super()._leave_game(key, at)

    def _start(self, matches: list[Match], now: float) -> None:
        sessions = self.waiting.session
        members = {
            p for m in matches for row in m.rows for p in self.sessions[int(sessions[row])].players.tolist()
        }
        self.started.append((now, members))
        super()._start(matches, now)


def test_players_leave_games_in_play_and_the_backfills_refill_their_seats() -> None:
    leaving = scenario(
        mode={"teams": 2, "team_size": 2}, parties={"1": 0.7, "2": 0.3}, sessions=LEAVING, duration="10m"
    )
    clock = Leavers(leaving)
    run = clock.run()
    assert run.leaving and run.backfill
    assert run.leavers > 10
    assert 0 < run.games_left < run.matches
    # Every game starts full (2v2), so each leave opens one seat, and some are filled.
    assert run.seats_opened == run.leavers == sum(len(times) for times in clock.left.values())
    filled = len(run.fill_wait)
    assert 0 < filled <= run.seats_opened
    assert (run.fill_wait >= 0).all()
    assert len(run.fill_quality) <= filled
    assert ((run.fill_quality > 0) & (run.fill_quality <= 1)).all()
    assert 0 < run.games_short <= run.games_left
    # Every place in a game (leavers and fillers too) was a matched ticket's, and was rated once.
    matched = run.ticket_outcome == MATCHED
    assert int(run.ticket_players[matched].sum()) == int(run.match_players.sum()) == int(run.games.sum())
    assert run.match_players.sum() > 4 * run.matches - run.leavers
    # A leaver's session is over: they start no match before the game they left has ended.
    for player, times in clock.left.items():
        assert len(times) == 1
        assert not any(
            times[0] < at < clock.over[player] and player in members for at, members in clock.started
        )
    assert run.errors == ()


def test_leaving_is_deterministic_for_a_seed() -> None:
    leaving = scenario(mode={"teams": 2, "team_size": 2}, sessions=LEAVING, duration="10m")
    one = run_virtual(leaving, population(leaving))
    two = run_virtual(leaving, population(leaving))
    assert one.leavers > 0
    for name, value in columns(one).items():
        if name == "wall_seconds":
            continue
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, columns(two)[name], equal_nan=True), name
        else:
            assert value == columns(two)[name], name


def test_a_backfill_proposal_goes_through_the_ready_check() -> None:
    leaving = scenario(
        mode=READY,
        parties={"1": 0.7, "2": 0.3},
        sessions={"leave_probability": 0.2, "decline_probability": 0.05},
        duration="10m",
    )
    run = run_virtual(leaving, population(leaving))
    assert len(run.fill_quality) > 0
    assert run.proposals_failed > 0
    # Proposals: every new match and every fill the players accepted, and those that failed.
    assert run.proposals == run.matches + len(run.fill_quality) + run.proposals_failed


def test_a_role_queue_takes_no_backfill_so_every_game_left_ends_short() -> None:
    roles = scenario(
        population=role_queue(),
        mode={"teams": 2, "team_size": 2, "roles": {"tank": 1, "damage": 1}},
        sessions=LEAVING,
        duration="10m",
    )
    run = run_virtual(roles, population(roles))
    assert run.leaving and not run.backfill
    assert run.games_left > 0
    assert run.games_short == run.games_left
    assert run.seats_opened == 0
    assert len(run.fill_wait) == len(run.fill_quality) == 0
    assert int(run.games.sum()) == int(run.match_players.sum()) == 4 * run.matches
