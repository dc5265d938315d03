"""SVG geometry of a mode's tier distribution: one bar per tier, lowest tier on the left,
its height the tier's share of the largest count.

Pure: counts in, rectangles out; the template draws them (no script, no front-end build).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 760.0, 240.0
LEFT, RIGHT, TOP, BOTTOM = 16.0, 16.0, 22.0, 40.0
GAP = 0.2  # the share of each slot left between bars


@dataclass(frozen=True, slots=True)
class Bar:
    name: str
    players: int
    x: float
    y: float
    width: float
    height: float
    centre: float


@dataclass(frozen=True, slots=True)
class Bars:
    width: float
    height: float
    left: float
    right: float
    bottom: float
    bars: list[Bar]
    total: int


def tier_bars(tiers: Sequence[tuple[str, int]]) -> Bars | None:
    """Lay out (tier name, players) in order; None without tiers."""
    if not tiers:
        return None
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    slot = (right - LEFT) / len(tiers)
    most = max((players for _, players in tiers), default=0) or 1
    bars = []
    for index, (name, players) in enumerate(tiers):
        height = (bottom - TOP) * players / most
        x = LEFT + index * slot + slot * GAP / 2
        bars.append(
            Bar(name, players, x, bottom - height, slot * (1 - GAP), height, x + slot * (1 - GAP) / 2)
        )
    return Bars(WIDTH, HEIGHT, LEFT, right, bottom, bars, sum(p for _, p in tiers))
