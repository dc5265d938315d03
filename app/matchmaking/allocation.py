"""Sharing supply among buckets that each accept only some of it: regions, roles.

Supply comes in types: a count, and the set of buckets that accept it as a bitmask (a ticket
near two regions, a player who can tank or heal). Demands d_b can all be met at once exactly
when Hall's condition holds (Hall 1935, in the transport form of Gale 1957): for every set A
of buckets, Σ_{b∈A} d_b ≤ N(A), the supply of the types that some bucket of A accepts. N is
read from one subset-sum table (`coverage`), so a check costs 2^buckets steps, and
`transport` then finds the shares by augmenting paths over the (few) types.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

# Buckets a Hall check enumerates the subsets of; above, callers share by preference alone.
HALL_LIMIT = 12


def coverage(masks: Sequence[int], supply: Sequence[int], buckets: int) -> list[int]:
    """N(A) for every set A of buckets (as a bitmask): the supply some bucket of A accepts."""
    within = [0] * (1 << buckets)  # supply whose accepted set lies within A
    for mask, count in zip(masks, supply, strict=True):
        within[mask] += count
    for bit in range(buckets):  # subset sums, one bit at a time
        step = 1 << bit
        for subset in range(1 << buckets):
            if subset & step:
                within[subset] += within[subset ^ step]
    total = sum(supply)
    full = (1 << buckets) - 1
    return [total - within[full ^ subset] for subset in range(1 << buckets)]


def meets_hall(covered: Sequence[int], demand: Sequence[int]) -> bool:
    """Whether the demands can all be met (Hall's condition over every set of buckets)."""
    wanted = [0] * len(covered)
    for subset in range(1, len(covered)):
        low = subset & -subset
        wanted[subset] = wanted[subset ^ low] + demand[low.bit_length() - 1]
        if wanted[subset] > covered[subset]:
            return False
    return True


def transport(masks: Sequence[int], supply: Sequence[int], demand: Sequence[int]) -> list[list[int]] | None:
    """How much of each type goes to each bucket so that every bucket gets exactly its demand
    (a type's unused supply stays unsent); None when that is impossible."""
    types, buckets = len(masks), len(demand)
    # Nodes: 0 source, 1..types, then the buckets, then the sink.
    sink = types + buckets + 1
    capacity: list[dict[int, int]] = [{} for _ in range(sink + 1)]

    def edge(a: int, b: int, amount: int) -> None:
        capacity[a][b] = capacity[a].get(b, 0) + amount
        capacity[b].setdefault(a, 0)

    unbounded = sum(supply)
    for number, (mask, count) in enumerate(zip(masks, supply, strict=True)):
        edge(0, 1 + number, count)
        for bucket in range(buckets):
            if mask >> bucket & 1:
                edge(1 + number, 1 + types + bucket, unbounded)
    for bucket, amount in enumerate(demand):
        edge(1 + types + bucket, sink, amount)
    needed = sum(demand)
    sent = 0
    while sent < needed:
        parent = {0: 0}
        frontier = deque([0])
        while frontier and sink not in parent:
            node = frontier.popleft()
            for nxt, room in capacity[node].items():
                if room > 0 and nxt not in parent:
                    parent[nxt] = node
                    frontier.append(nxt)
        if sink not in parent:
            return None
        path = [sink]
        while path[-1] != 0:
            path.append(parent[path[-1]])
        amount = min(capacity[parent[node]][node] for node in path[:-1])
        for node in path[:-1]:
            capacity[parent[node]][node] -= amount
            capacity[node][parent[node]] += amount
        sent += amount
    return [
        [
            capacity[1 + types + bucket].get(1 + number, 0) if masks[number] >> bucket & 1 else 0
            for bucket in range(buckets)
        ]
        for number in range(types)
    ]


def deal(counts: Sequence[int]) -> npt.NDArray[np.int64]:
    """Labels 0..len(counts)−1 in order, counts[b] of label b, each spread evenly over the order
    (a ticket kind's shares dealt across its skill order, so no bucket gets only its strongest)."""
    keys = np.concatenate([(np.arange(c) + 0.5) / c for c in counts if c] or [np.empty(0)])
    labels = np.concatenate(
        [np.full(c, b, dtype=np.int64) for b, c in enumerate(counts) if c] or [np.empty(0, np.int64)]
    )
    dealt: npt.NDArray[np.int64] = labels[np.argsort(keys, kind="stable")]
    return dealt
