"""The oracle of the proposal-quality tests: an upper bound on the total weight of any matching.

Maximum-weight matching relaxed to a linear programme (each edge taken with a weight x in
[0, 1], the x's of the edges at each vertex summing to at most 1) admits every matching of the
graph, so its optimum bounds them all from above. Proposals that reach a share of the bound
reach at least that share of the best matching, so a test that asserts it against the bound
asserts no less than one against the exact optimum (networkx's blossom algorithm, which these
tests ran before, pure Python and the suite's slowest step). HiGHS, through scipy, solves it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix


def matching_bound(weights: Mapping[frozenset[str], float]) -> float:
    """The linear relaxation's optimum over the graph whose edges (pairs of vertex names) have
    these weights: at least the total weight of every matching."""
    edges = list(weights)
    vertices = {vertex: i for i, vertex in enumerate(sorted({v for edge in edges for v in edge}))}
    rows = [vertices[v] for edge in edges for v in sorted(edge)]
    columns = [i for i in range(len(edges)) for _ in range(2)]
    incidence = coo_matrix((np.ones(len(rows)), (rows, columns)), shape=(len(vertices), len(edges)))
    gains = -np.array([weights[edge] for edge in edges])
    at_most_one = np.ones(len(vertices))
    result = linprog(gains, A_ub=incidence.tocsr(), b_ub=at_most_one, bounds=(0, 1), method="highs")
    assert result.status == 0, result.message
    return float(-result.fun)
