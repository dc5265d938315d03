"""The latency rule: a match forms only in a region where each of its tickets is close enough.

A ticket may list its players' latency per region (milliseconds). A mode may set a limit,
which relaxes with the longest wait in the match as the quality threshold does (linearly,
from `start_ms` to `relaxed_ms` over `seconds`; PlayFab's latency rule works the same
way). A match is feasible in a region when every ticket that lists latencies lists that
region within the limit in force; tickets that list none fit every region. A match is
named for its feasible region with the lowest worst latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class LatencyRule:
    """The latency a match may reach in its region, as a function of its longest wait."""

    start_ms: float
    relaxed_ms: float
    seconds: float

    @property
    def widest(self) -> float:
        """The most the limit ever allows: a ticket above it in a region never plays there."""
        return max(self.start_ms, self.relaxed_ms)

    def limit(self, waited: float) -> float:
        if self.seconds <= 0 or waited >= self.seconds:
            return self.relaxed_ms
        return self.start_ms + (self.relaxed_ms - self.start_ms) * waited / self.seconds

    def limits(self, waited: FloatArray) -> FloatArray:
        """`limit` of every element, with the same arithmetic."""
        if self.seconds <= 0:
            return np.full_like(waited, self.relaxed_ms)
        relaxed = self.start_ms + (self.relaxed_ms - self.start_ms) * waited / self.seconds
        return np.where(waited >= self.seconds, self.relaxed_ms, relaxed)


@dataclass(frozen=True, slots=True)
class Latencies:
    """Per ticket and region of a pool: the latency in ms. A ticket that lists latencies has
    +inf in the regions it did not list; a ticket that lists none has 0 everywhere (it fits
    every region) and is not `located`."""

    regions: Sequence[str]
    ms: FloatArray  # (tickets, regions)
    located: BoolArray  # (tickets,)

    @classmethod
    def of(cls, listed: Sequence[Sequence[tuple[str, float]]]) -> Latencies | None:
        """From each ticket's (region, ms) pairs; None when no ticket lists any."""
        regions = sorted({name for pairs in listed for name, _ in pairs})
        if not regions:
            return None
        column = {name: number for number, name in enumerate(regions)}
        ms = np.zeros((len(listed), len(regions)))
        located = np.array([bool(pairs) for pairs in listed], dtype=np.bool_)
        ms[located] = np.inf
        for row, pairs in enumerate(listed):
            for name, value in pairs:
                ms[row, column[name]] = value
        return cls(regions, ms, located)


def worst_by_region(ms: FloatArray, rows: IntArray) -> FloatArray:
    """Per match (a row of `rows`, one pool row per ticket): each region's worst latency."""
    worst: FloatArray = ms[rows].max(axis=1)
    return worst


def regions_of(latencies: Latencies, matches: Sequence[Sequence[int]]) -> list[str | None]:
    """Each match's region: the one with the lowest worst latency among its tickets, or None
    when none of its tickets lists latencies (or they share no region)."""
    named: list[str | None] = [None] * len(matches)
    by_count: dict[int, list[int]] = {}
    for number, rows in enumerate(matches):
        by_count.setdefault(len(rows), []).append(number)
    for numbers in by_count.values():
        # Matches with as many tickets are stacked, so each count costs a few NumPy calls.
        stacked = np.array([matches[number] for number in numbers], dtype=np.int64)
        worst = worst_by_region(latencies.ms, stacked)
        best = worst.argmin(axis=1)
        finite = np.isfinite(worst[np.arange(len(numbers)), best])
        located = latencies.located[stacked].any(axis=1)
        for number, region, keep in zip(numbers, best.tolist(), (finite & located).tolist(), strict=True):
            if keep:
                named[number] = latencies.regions[region]
    return named
