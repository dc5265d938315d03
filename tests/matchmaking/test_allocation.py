"""Sharing supply among buckets: Hall's condition against brute force, and the transport it promises."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import numpy as np
import pytest

from app.matchmaking.allocation import coverage, deal, meets_hall, transport


def brute_feasible(masks: list[int], supply: list[int], demand: list[int]) -> bool:
    """Whether demands can be met: a maximum flow (networkx) equal to their sum."""
    graph = nx.DiGraph()
    for number, (mask, count) in enumerate(zip(masks, supply, strict=True)):
        graph.add_edge("s", ("k", number), capacity=count)
        for bucket in range(len(demand)):
            if mask >> bucket & 1:
                graph.add_edge(("k", number), ("b", bucket), capacity=count)
    for bucket, amount in enumerate(demand):
        graph.add_edge(("b", bucket), "t", capacity=amount)
    if "s" not in graph or "t" not in graph:
        return sum(demand) == 0
    return bool(nx.maximum_flow_value(graph, "s", "t") == sum(demand))


@pytest.mark.parametrize("seed", range(40))
def test_hall_and_transport_agree_with_a_maximum_flow(seed: int) -> None:
    rng = random.Random(seed)
    buckets = rng.randint(1, 4)
    kinds = rng.randint(1, 6)
    masks = [rng.randint(0, (1 << buckets) - 1) for _ in range(kinds)]
    supply = [rng.randint(0, 9) for _ in range(kinds)]
    demand = [rng.randint(0, 12) for _ in range(buckets)]
    covered = coverage(masks, supply, buckets)
    for subset in range(1 << buckets):
        assert covered[subset] == sum(c for m, c in zip(masks, supply, strict=True) if m & subset)
    expected = brute_feasible(masks, supply, demand)
    assert meets_hall(covered, demand) == expected
    shares = transport(masks, supply, demand)
    assert (shares is not None) == expected
    if shares is not None:
        for mask, count, share in zip(masks, supply, shares, strict=True):
            assert sum(share) <= count
            assert all(share[b] == 0 for b in range(buckets) if not mask >> b & 1)
        assert [sum(share[b] for share in shares) for b in range(buckets)] == demand


def test_deal_spreads_every_label_over_the_order() -> None:
    dealt = deal([2, 6, 0, 4])
    assert sorted(dealt.tolist()) == [0, 0, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3]
    # Each label lands in every third of the order in proportion to its count.
    for label, count in ((1, 6), (3, 4)):
        positions = np.flatnonzero(dealt == label)
        thirds = np.bincount(positions * 3 // len(dealt), minlength=3)
        assert max(thirds) - min(thirds) <= 1, (label, count)
    assert deal([]).tolist() == []


def test_a_bucket_nobody_accepts_is_only_met_at_zero() -> None:
    covered = coverage([0b01], [5], 2)
    assert meets_hall(covered, [5, 0])
    assert not meets_hall(covered, [5, 1])
    assert transport([0b01], [5], [3, 0]) == [[3, 0]]
    for demand in itertools.product(range(3), repeat=2):
        assert (transport([0b01, 0b11], [2, 1], list(demand)) is not None) == brute_feasible(
            [0b01, 0b11], [2, 1], list(demand)
        )
