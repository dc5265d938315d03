"""1v1 pairing: near the optimum on small pools, and each pair's wait."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from app.matchmaking.pool import Ticket
from app.matchmaking.proposals import MatchShape, Relaxation, propose
from app.rating import Rating, TrueSkill, quality_1vs1

ENV = TrueSkill()
OPEN = Relaxation(0.0, 0.0, 1.0)


def solo(rng: random.Random, count: int) -> list[Ticket]:
    return [
        Ticket(f"t{i}", (f"p{i}",), (Rating(rng.uniform(0, 50), rng.uniform(1, 8)),), "{}", rng.uniform(0, 9))
        for i in range(count)
    ]


@pytest.mark.parametrize(("count", "seed"), [(60, 1), (80, 5), (100, 6)])
def test_pairing_is_within_0_7_percent_of_the_optimum_on_small_pools(count: int, seed: int) -> None:
    """Against networkx's maximum-weight matching over every pair. On these pools the greedy
    pass alone stays 1.2–1.7% short; the repair of crossed pairs closes most of that."""
    tickets = solo(random.Random(seed), count)
    graph = nx.Graph()
    for i, a in enumerate(tickets):
        for b in tickets[i + 1 :]:
            graph.add_edge(a.ticket_id, b.ticket_id, weight=quality_1vs1(a.ratings[0], b.ratings[0], env=ENV))
    best = sum(graph[a][b]["weight"] for a, b in nx.max_weight_matching(graph))
    ours = propose(tickets, MatchShape(2, 1), ENV, OPEN, max_matches=10_000)
    assert len(ours) == count // 2
    assert sum(p.quality for p in ours) >= 0.993 * best


def test_a_pair_carries_the_longer_wait_of_its_two_tickets() -> None:
    tickets = solo(random.Random(3), 20)
    waited = {t.ticket_id: t.waited for t in tickets}
    made = propose(tickets, MatchShape(2, 1), ENV, OPEN, max_matches=10)
    assert len(made) == 10
    for proposal in made:
        assert proposal.longest_wait == max(waited[t] for t in proposal.ticket_ids)
