"""SVG geometry of a rating history: mu as a line, mu ± sigma as a band, play order on x.

x is each point's place in time order (all series merged), not the time itself: matches
posted seconds apart would otherwise stack on one vertical line, and a burst of play next
to a quiet month would get no width at all. The x labels give the time at their point, as
dates when the ticks fall on different days, as times of day when all points fall within
one day, and as both otherwise, so no label repeats another.

Pure: numbers in, path strings out. The template draws them, so the page needs no
script and no front-end build.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 760.0, 320.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 16.0, 16.0, 36.0
# More points than pixels only slow the browser down.
MAX_POINTS = 1500


@dataclass(frozen=True, slots=True)
class Point:
    t: dt.datetime
    mu: float
    sigma: float


@dataclass(frozen=True, slots=True)
class Curve:
    """One drawn series: `line` is the mu path, `band` the closed mu ± sigma polygon."""

    name: str
    css: str
    line: str
    band: str
    points: int


@dataclass(frozen=True, slots=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Plot:
    width: float
    height: float
    left: float
    top: float
    right: float
    bottom: float
    curves: list[Curve]
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    x_caption: str


def thin(points: Sequence[Point], limit: int = MAX_POINTS) -> list[Point]:
    """At most `limit` points, evenly spaced by index, always keeping the last."""
    if len(points) <= limit:
        return list(points)
    step = math.ceil(len(points) / limit)
    kept = list(points[::step])
    if kept[-1] is not points[-1]:
        kept.append(points[-1])
    return kept


def nice_step(span: float, count: int) -> float:
    """A 1, 2 or 5 times a power of ten step giving about `count` ticks over `span`."""
    raw = span / max(count, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def time_labels(times: Sequence[dt.datetime]) -> tuple[list[str], str]:
    """Labels for tick times (ascending, UTC), and what they show: dates when those differ,
    times of day when every tick falls on one day, else both."""
    days = [t.date() for t in times]
    if len(set(days)) == len(days):
        return [t.strftime("%Y-%m-%d") for t in times], "date (UTC)"
    if len(set(days)) == 1:
        # As coarse as keeps the labels apart: minutes, seconds, or milliseconds.
        for form in ("%H:%M", "%H:%M:%S"):
            labels = [t.strftime(form) for t in times]
            if len(set(labels)) == len(labels):
                break
        else:
            labels = [t.strftime("%H:%M:%S.%f")[:-3] for t in times]
        return labels, f"time on {days[0].isoformat()} (UTC)"
    return [t.strftime("%m-%d %H:%M") for t in times], "date and time (UTC)"


def plot(series: Sequence[tuple[str, str, Sequence[Point]]]) -> Plot | None:
    """Lay out (name, css class, points) series on shared axes; None when there is nothing to draw."""
    drawn = [(name, css, thin(points)) for name, css, points in series if points]
    if not drawn:
        return None
    # Every point's slot on x: its place in time order over all series (ties: series, then
    # the series' own order), so no two points share an x.
    merged = sorted(
        (
            (p.t, index, position)
            for index, (_, _, points) in enumerate(drawn)
            for position, p in enumerate(points)
        ),
    )
    slots = {(index, position): slot for slot, (_, index, position) in enumerate(merged)}
    lows = [p.mu - p.sigma for _, _, points in drawn for p in points]
    highs = [p.mu + p.sigma for _, _, points in drawn for p in points]
    last = max(len(merged) - 1, 1)
    step = nice_step(max(highs) - min(lows) or 1.0, 5)
    y0 = math.floor(min(lows) / step) * step
    y1 = math.ceil(max(highs) / step) * step
    if y1 <= y0:
        y1 = y0 + step
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(slot: int) -> float:
        if len(merged) == 1:  # a single point sits in the middle
            return (LEFT + right) / 2
        return LEFT + slot / last * (right - LEFT)

    def y(v: float) -> float:
        return bottom - (v - y0) / (y1 - y0) * (bottom - TOP)

    curves = []
    for index, (name, css, points) in enumerate(drawn):
        xs = [x(slots[index, position]) for position in range(len(points))]
        line = " ".join(
            f"{'M' if i == 0 else 'L'}{px:.1f},{y(p.mu):.1f}"
            for i, (px, p) in enumerate(zip(xs, points, strict=True))
        )
        upper = [f"{px:.1f},{y(p.mu + p.sigma):.1f}" for px, p in zip(xs, points, strict=True)]
        lower = [f"{px:.1f},{y(p.mu - p.sigma):.1f}" for px, p in zip(xs, points, strict=True)]
        band = "M" + " L".join(upper + lower[::-1]) + " Z"
        curves.append(Curve(name, css, line, band, len(points)))

    y_ticks = []
    count = round((y1 - y0) / step)
    for i in range(count + 1):
        value = y0 + i * step
        y_ticks.append(Tick(y(value), f"{value:g}"))
    # Up to five ticks at evenly spaced slots, none at the same time as another.
    chosen: list[int] = []
    for i in range(5):
        slot = round(i * (len(merged) - 1) / 4)
        if not chosen or merged[slot][0] != merged[chosen[-1]][0]:
            chosen.append(slot)
    labels, caption = time_labels([merged[slot][0].astimezone(dt.UTC) for slot in chosen])
    x_ticks = [Tick(x(slot), label) for slot, label in zip(chosen, labels, strict=True)]
    return Plot(WIDTH, HEIGHT, LEFT, TOP, right, bottom, curves, x_ticks, y_ticks, f"match order; {caption}")
