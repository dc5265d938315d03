"""The proposal-quality oracle (tests/matchmaking/optimum.py) against every matching of small graphs."""

from __future__ import annotations

import itertools
import random

import pytest

from tests.matchmaking.optimum import matching_bound


def best_matching(weights: dict[frozenset[str], float]) -> float:
    """The heaviest matching, by trying every set of edges."""
    edges = list(weights)
    vertices = {v for edge in edges for v in edge}
    best = 0.0
    for count in range(1, len(vertices) // 2 + 1):
        for chosen in itertools.combinations(edges, count):
            vertices = [v for edge in chosen for v in edge]
            if len(vertices) == len(set(vertices)):
                best = max(best, sum(weights[edge] for edge in chosen))
    return best


@pytest.mark.parametrize("seed", range(20))
def test_the_bound_is_at_least_every_matching_and_exact_on_bipartite_graphs(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"v{i}" for i in range(rng.randint(3, 7))]
    pairs = [frozenset(pair) for pair in itertools.combinations(names, 2)]
    weights = {pair: rng.uniform(0.0, 1.0) for pair in rng.sample(pairs, rng.randint(1, len(pairs)))}
    assert matching_bound(weights) >= best_matching(weights) - 1e-9
    # Between two sides the relaxation's corners are matchings (a totally unimodular system).
    left, right = names[: len(names) // 2], names[len(names) // 2 :]
    bipartite = {frozenset((a, b)): rng.uniform(0.0, 1.0) for a in left for b in right}
    assert matching_bound(bipartite) == pytest.approx(best_matching(bipartite), abs=1e-9)


def test_a_triangle_is_bounded_above_its_best_matching() -> None:
    """The bound is a bound: on an odd cycle the relaxation takes every edge at one half."""
    triangle = {frozenset(("a", "b")): 1.0, frozenset(("b", "c")): 1.0, frozenset(("a", "c")): 1.0}
    assert best_matching(triangle) == 1.0
    assert matching_bound(triangle) == pytest.approx(1.5)
