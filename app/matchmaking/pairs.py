"""1v1 matches: pairs of skill neighbours, best draw quality first, then repaired.

The tickets of one group are sorted by skill, and each is paired as a candidate with its
NEIGHBOURS next tickets: a pair further apart is dominated in quality by nearer ones,
up to sigma. Every candidate is scored at once (eq. 7) and kept if it clears the threshold
of its longer wait. Candidates are then taken greedily by quality without overlap, a
1/2-approximation of the maximum-weight matching. Tickets whose neighbours were all taken
pair with each other in skill order. Last comes 2-opt: two matches close in skill swap
partners when that raises their total quality, with every exchange of a pass scored at once.

Under a latency rule a pair must share a region within the limit of the tier in force
(regions.py). Skill neighbours are then taken within each region: among the tickets the tier
lets play there, so a far-away neighbour in skill order does not hide a near one in the
region, and the candidates of all regions are pooled before the greedy pass. (Pairs need no
share of the tickets among regions first: a region's leftover is one ticket at most.) A pair
whose tickets avoid each other is never a candidate (avoid.py).
"""

from __future__ import annotations

import numpy as np

from app.matchmaking.forming import Forming
from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Match
from app.matchmaking.quality import pair_quality

NEIGHBOURS = 8
# A call taking max_matches pairs first sorts the best TOP_FIRST × max_matches candidates.
TOP_FIRST = 16
# 2-opt exchanges between a match and its next REPAIR_REACH matches by skill.
REPAIR_REACH = 3
REPAIR_ROUNDS = 3


class _Scored:
    """One group's solo tickets, sorted by skill: pair quality and threshold by position.
    Under latencies, `feasible` (tickets × regions) says where the tier lets each play, and
    with a rule (the borrowed tier) a pair is also checked against its own longer wait."""

    def __init__(
        self, forming: Forming, rows: IntArray, feasible: BoolArray | None, rule: LatencyRule | None
    ) -> None:
        pool = forming.pool
        self.rows = rows
        self.mu = pool.mu[rows]
        self.var = pool.var[rows]
        self.waited = pool.waited[rows]
        self.beta2 = forming.beta2
        self.relax = forming.relax
        self.clashes = forming.clashes
        self.feasible = feasible
        self.rule = rule
        self.ms = pool.latencies.ms[rows] if pool.latencies is not None and rule is not None else None

    def lists(self) -> list[tuple[int, IntArray]]:
        """Positions (in skill order) among which neighbours are paired, with their region:
        all of them (−1), or per region those the tier lets play there."""
        if self.feasible is None:
            return [(-1, np.arange(len(self.mu)))]
        return [
            (region, np.flatnonzero(self.feasible[:, region])) for region in range(self.feasible.shape[1])
        ]

    def quality(self, a: IntArray, b: IntArray) -> FloatArray:
        return pair_quality(self.mu[a], self.var[a], self.mu[b], self.var[b], self.beta2)

    def clears_in(self, region: int, a: IntArray, b: IntArray, quality: FloatArray) -> BoolArray:
        """`clears` for two tickets both let play in `region`, checked there only."""
        waited = np.maximum(self.waited[a], self.waited[b])
        clear: BoolArray = quality >= self.relax.thresholds(waited)
        if self.ms is not None and self.rule is not None:
            column = self.ms[:, region]
            clear &= np.maximum(column[a], column[b]) <= self.rule.limits(waited)
        if self.clashes:
            clear &= ~self.clashes.between(self.rows[a], self.rows[b])
        return clear

    def clears(self, a: IntArray, b: IntArray, quality: FloatArray) -> BoolArray:
        waited = np.maximum(self.waited[a], self.waited[b])
        clear: BoolArray = quality >= self.relax.thresholds(waited)
        if self.feasible is not None:
            shared = self.feasible[a] & self.feasible[b]
            if self.ms is not None and self.rule is not None:
                shared &= np.maximum(self.ms[a], self.ms[b]) <= self.rule.limits(waited)[:, None]
            clear &= shared.any(axis=1)
        if self.clashes:
            clear &= ~self.clashes.between(self.rows[a], self.rows[b])
        return clear


def pair_matches(
    forming: Forming, rows: IntArray, feasible: BoolArray | None = None, rule: LatencyRule | None = None
) -> list[Match]:
    """Up to max_matches pairs among `rows`: one group's solo tickets, sorted by skill."""
    count = len(rows)
    max_matches = forming.max_matches
    if count < 2:
        return []
    scored = _Scored(forming, rows, feasible, rule)
    lists = scored.lists()
    firsts, seconds, qualities = [], [], []
    for region, positions in lists:
        for reach in range(1, min(NEIGHBOURS, len(positions) - 1) + 1):
            a, b = positions[:-reach], positions[reach:]
            quality = scored.quality(a, b)
            # In a region's list, a pair is checked in that region alone: cheaper than every
            # region, and a pair that fits elsewhere is a candidate of that region's list.
            keep = np.nonzero(scored.clears_in(region, a, b, quality))[0]
            firsts.append(a[keep])
            seconds.append(b[keep])
            qualities.append(quality[keep])
    if not firsts:
        return []
    # A pair near in skill in several regions is a candidate several times: harmless, as the
    # greedy pass skips a pair whose tickets are taken.
    first = np.concatenate(firsts)
    second = np.concatenate(seconds)
    quality = np.concatenate(qualities)
    used = bytearray(count)
    taken_a: list[int] = []
    taken_b: list[int] = []
    # Best quality first; ties in a fixed order (by position). A call that takes few matches
    # sorts only the best candidates first (taken tickets skip most of the rest anyway), and
    # all of them only if those run out.
    ranked = np.arange(len(quality))
    if TOP_FIRST * max_matches < len(quality):
        ranked = np.argpartition(-quality, TOP_FIRST * max_matches)[: TOP_FIRST * max_matches]
    for _ in range(2):
        order = ranked[np.lexsort((second[ranked], first[ranked], -quality[ranked]))]
        for i, j in zip(first[order].tolist(), second[order].tolist(), strict=True):
            if len(taken_a) >= max_matches:
                break
            if used[i] or used[j]:
                continue
            used[i] = used[j] = 1
            taken_a.append(i)
            taken_b.append(j)
        if len(taken_a) >= max_matches or len(ranked) == len(quality):
            break
        ranked = np.arange(len(quality))
    for _, positions in lists:
        if len(taken_a) >= max_matches:
            break
        # Tickets whose neighbours were all taken may still pair with each other.
        free = np.array([i for i in positions.tolist() if not used[i]], dtype=np.int64)
        a, b = free[0 : len(free) - 1 : 2], free[1::2]
        clear = np.nonzero(scored.clears(a, b, scored.quality(a, b)))[0][: max_matches - len(taken_a)]
        for i, j in zip(a[clear].tolist(), b[clear].tolist(), strict=True):
            used[i] = used[j] = 1
            taken_a.append(i)
            taken_b.append(j)
    a, b = _repair(np.array(taken_a, dtype=np.int64), np.array(taken_b, dtype=np.int64), scored)
    final = scored.quality(a, b).tolist()
    longest = np.maximum(scored.waited[a], scored.waited[b]).tolist()
    return [
        Match(((int(rows[i]),), (int(rows[j]),)), q, wait)
        for i, j, q, wait in zip(a.tolist(), b.tolist(), final, longest, strict=True)
    ]


def _repair(a: IntArray, b: IntArray, scored: _Scored) -> tuple[IntArray, IntArray]:
    """2-opt on greedy pairs: re-pair two matches close in skill when that raises their total
    quality. Greedy by quality leaves up to half the optimum; this recovers most of the gap."""
    order = np.argsort(scored.mu[a] + scored.mu[b], kind="stable")
    a, b = a[order], b[order]
    for _ in range(REPAIR_ROUNDS):
        improved = False
        for reach in range(1, REPAIR_REACH + 1):
            if len(a) <= reach:
                break
            x, y = a[:-reach].copy(), b[:-reach].copy()
            u, w = a[reach:].copy(), b[reach:].copy()
            current = scored.quality(x, y) + scored.quality(u, w)
            # The two other ways to pair the four tickets of matches k and k + reach.
            crossed = _pair_total(x, u, y, w, scored)
            swapped = _pair_total(x, w, y, u, scored)
            best = np.maximum(crossed, swapped)
            better = np.nonzero(best > current * (1 + 1e-12))[0]
            touched = bytearray(len(a))
            for k in better[np.argsort(current[better] - best[better], kind="stable")].tolist():
                if touched[k] or touched[k + reach]:
                    continue
                touched[k] = touched[k + reach] = 1
                if crossed[k] >= swapped[k]:
                    a[k], b[k], a[k + reach], b[k + reach] = x[k], u[k], y[k], w[k]
                else:
                    a[k], b[k], a[k + reach], b[k + reach] = x[k], w[k], y[k], u[k]
                improved = True
        if not improved:
            break
    return a, b


def _pair_total(p: IntArray, q: IntArray, r: IntArray, s: IntArray, scored: _Scored) -> FloatArray:
    """Quality of (p, q) plus (r, s), or −inf where either misses its threshold."""
    first = scored.quality(p, q)
    second = scored.quality(r, s)
    both = scored.clears(p, q, first) & scored.clears(r, s, second)
    total: FloatArray = np.where(both, first + second, -np.inf)
    return total
