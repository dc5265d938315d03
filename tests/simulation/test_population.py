"""The population and the random draws of players' comings and goings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.simulation.population import Behaviour, Offline, Streams, build
from tests.simulation.helpers import scenario

REGIONS = [
    {"name": "eu", "share": 3.0, "latency_ms": 30, "latency_sd_ms": 5, "others": {"na": 80}},
    {"name": "na", "share": 1.0, "latency_ms": 40, "latency_sd_ms": 5},
]


def test_players_get_homes_by_share_and_latencies_to_the_regions_they_list() -> None:
    spread = scenario(regions=REGIONS, population={"size": 4000})
    players = build(spread, Streams.of(1).population)
    assert len(players) == 4000
    assert players.regions == ("eu", "na")
    assert abs((players.home == 0).mean() - 0.75) < 0.03
    assert players.latency is not None
    eu = players.home == 0
    assert players.latency[eu, 1] - players.latency[eu, 0] == pytest.approx(80.0)
    # na lists no other region: its players never play in eu.
    assert np.isinf(players.latency[~eu, 0]).all()
    assert (players.latency >= 1.0).all()
    assert abs(players.skill.mean() - 25.0) < 0.5
    assert (players.mu == 25.0).all()


def test_a_population_from_a_mode_starts_from_its_ratings() -> None:
    from_mode = scenario(population={"size": 3, "from_mode": "ranked"})
    rated = [(30.0, 1.0), (20.0, 2.0), (25.0, 0.5), (10.0, 3.0)]
    players = build(from_mode, Streams.of(1).population, rated)
    assert len(players) == 3
    assert {(m, s) for m, s in zip(players.mu.tolist(), players.sigma.tolist(), strict=True)} <= set(rated)
    with pytest.raises(ValueError, match=r"population\.from_mode: mode 'ranked' has no rated players"):
        build(from_mode, Streams.of(1).population, [])


def test_sessions_and_arrivals_have_the_means_the_scenario_gives() -> None:
    sessions = scenario(
        sessions={
            "matches": 4,
            "fixed": False,
            "pause_seconds": 20,
            "match_seconds": 300,
            "match_seconds_sd": 60,
        },
        arrivals={"players_per_second": 2.0},
        parties={"1": 1.0, "3": 1.0},
        mode={"team_size": 3},
    )
    behaviour = Behaviour(sessions, np.random.default_rng(3))
    assert np.mean([behaviour.session_matches() for _ in range(20000)]) == pytest.approx(4.0, rel=0.03)
    assert np.mean([behaviour.pause() for _ in range(20000)]) == pytest.approx(20.0, rel=0.03)
    lengths = [behaviour.match_length() for _ in range(20000)]
    assert np.mean(lengths) == pytest.approx(300.0, rel=0.01)
    assert min(lengths) >= 30.0
    # Two players per party on average: a party a second.
    moment, count = 0.0, 0
    while moment < 1000:
        moment = behaviour.next_arrival(moment)
        count += 1
    assert count == pytest.approx(1000, rel=0.1)
    assert behaviour.next_arrival(sessions.duration_seconds) == math.inf


def test_offline_players_are_drawn_with_mates_from_their_region() -> None:
    home = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    offline = Offline(home, 2)
    rng = np.random.default_rng(0)
    taken = [offline.take(rng, 2) for _ in range(3)]
    assert sorted(p for party in taken for p in party) == [0, 1, 2, 3, 4]
    assert all(len({int(home[p]) for p in party}) == 1 for party in taken)
    assert offline.take(rng, 1) == []
    offline.put_back([4, 1])
    assert len(offline) == 2
    assert sorted(offline.take(rng, 1) + offline.take(rng, 1)) == [1, 4]
