"""Windows of tickets with parties: the quality threshold and the latency limit hold for them."""

from __future__ import annotations

import pytest

from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import Ticket
from app.matchmaking.proposals import MatchShape, Relaxation, propose
from app.matchmaking.scoring import snake_pattern
from app.rating import Rating, TrueSkill

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 1.0)


def party(name: str, mu: float, latencies: tuple[tuple[str, float], ...] = ()) -> Ticket:
    """A party of two players of skill mu each, waiting 5 s."""
    return Ticket(name, (f"{name}-1", f"{name}-2"), (Rating(mu, 2.0), Rating(mu, 2.0)), "{}", 5.0, latencies)


def test_parties_form_no_match_below_the_quality_threshold() -> None:
    """Two parties far apart in skill make one possible 2v2, whose quality is far below 0.5:
    it is proposed when any quality will do, and not under a threshold of 0.5."""
    tickets = [party("strong", 40.0), party("weak", 10.0)]
    (only,) = propose(tickets, MatchShape(2, 2), ENV, OPEN, max_matches=5)
    assert only.quality < 0.01
    assert propose(tickets, MatchShape(2, 2), ENV, Relaxation(0.5, 0.5, 60.0), max_matches=5) == []


def test_a_party_window_at_exactly_the_latency_limit_plays_and_one_above_does_not() -> None:
    rule = LatencyRule(start_ms=50.0, relaxed_ms=50.0, seconds=10.0)
    at_limit = [party("a", 25.0, (("eu", 50.0),)), party("b", 25.0, (("eu", 20.0),))]
    (match,) = propose(at_limit, MatchShape(2, 2), ENV, OPEN, max_matches=5, latency=rule)
    assert match.region == "eu"
    above = [party("a", 25.0, (("eu", 50.5),)), party("b", 25.0, (("eu", 20.0),))]
    assert propose(above, MatchShape(2, 2), ENV, OPEN, max_matches=5, latency=rule) == []


def test_the_best_of_two_overlapping_party_windows_is_the_one_proposed() -> None:
    """Parties of two at 20, 21 and 35 for a 2v2: the windows {20, 21} and {21, 35} share the
    middle party, and the closer one is proposed."""
    tickets = [party("low", 20.0), party("mid", 21.0), party("far", 35.0)]
    (only,) = propose(tickets, MatchShape(2, 2), ENV, OPEN, max_matches=5)
    assert set(only.ticket_ids) == {"low", "mid"}


@pytest.mark.parametrize(
    ("teams", "team_size", "labels"),
    [(2, 3, [1, 0, 0, 1, 1, 0]), (3, 2, [0, 1, 2, 2, 1, 0]), (2, 1, [1, 0])],
)
def test_a_snake_draft_from_the_strongest_down(teams: int, team_size: int, labels: list[int]) -> None:
    """Positions in ascending skill: the strongest (last) goes to team 0, the next to team 1,
    and so on, the order reversing at each lap."""
    assert snake_pattern(teams, team_size).tolist() == labels
