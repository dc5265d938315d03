"""SVG geometry of a rating history: mu as a line, mu ± sigma as a band, time on x.

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


def plot(series: Sequence[tuple[str, str, Sequence[Point]]]) -> Plot | None:
    """Lay out (name, css class, points) series on shared axes; None when there is nothing to draw."""
    drawn = [(name, css, thin(points)) for name, css, points in series if points]
    if not drawn:
        return None
    times = [p.t.timestamp() for _, _, points in drawn for p in points]
    lows = [p.mu - p.sigma for _, _, points in drawn for p in points]
    highs = [p.mu + p.sigma for _, _, points in drawn for p in points]
    t0, t1 = min(times), max(times)
    if t1 - t0 < 86400:  # one day at least, so a single match still gets an axis
        t0, t1 = t0 - 43200, t1 + 43200
    step = nice_step(max(highs) - min(lows) or 1.0, 5)
    y0 = math.floor(min(lows) / step) * step
    y1 = math.ceil(max(highs) / step) * step
    if y1 <= y0:
        y1 = y0 + step
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM

    def x(t: float) -> float:
        return LEFT + (t - t0) / (t1 - t0) * (right - LEFT)

    def y(v: float) -> float:
        return bottom - (v - y0) / (y1 - y0) * (bottom - TOP)

    curves = []
    for name, css, points in drawn:
        xs = [x(p.t.timestamp()) for p in points]
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
    x_ticks = []
    for i in range(5):
        t = t0 + (t1 - t0) * i / 4
        x_ticks.append(Tick(x(t), dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d")))
    return Plot(WIDTH, HEIGHT, LEFT, TOP, right, bottom, curves, x_ticks, y_ticks)
