"""The report's charts as standalone SVG files: lines over a numeric x, and grouped bars (pure).

The ops page's plot geometry (app.ui.plot) sets the size, margins and tick steps, so the
report's charts read like the ops page's; these are files of their own, so each carries its
style, title, axis captions and legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from app.ui.plot import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, nice_step

# Room above the plot for the title and the legend, below for the x caption.
HEADER = 44.0
FOOTER = 16.0
COLOURS = ("#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#4b5563")
STYLE = (
    "text{font-family:system-ui,sans-serif;font-size:11px;fill:#374151}"
    ".title{font-size:13px;font-weight:600;fill:#111827}"
    ".grid{stroke:#e5e7eb;stroke-width:1}.axis{stroke:#6b7280;stroke-width:1}"
    ".line{fill:none;stroke-width:2}.dashed{stroke-dasharray:6 4}"
    ".guide{stroke:#9ca3af;stroke-width:1;stroke-dasharray:3 3}"
)


@dataclass(frozen=True, slots=True)
class Series:
    """One line: points (x, y); NaN breaks the line. `dashed` for baselines and references."""

    name: str
    x: Sequence[float]
    y: Sequence[float]
    dashed: bool = False
    markers: bool = False


@dataclass(frozen=True, slots=True)
class Guide:
    """A labelled reference line across the plot: horizontal at y (`vertical` False) or
    vertical at x."""

    at: float
    label: str
    vertical: bool = False


@dataclass(frozen=True, slots=True)
class _Frame:
    x0: float
    x1: float
    y0: float
    y1: float
    left: float = LEFT
    right: float = WIDTH - RIGHT
    top: float = TOP + HEADER
    bottom: float = HEIGHT + HEADER - BOTTOM

    def x(self, value: float) -> float:
        return self.left + (value - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, value: float) -> float:
        return self.bottom - (value - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)


def _span(values: Sequence[float], fixed: tuple[float, float] | None) -> tuple[float, float, float]:
    """(low, high, step) of an axis: `fixed`, or the values' range widened to nice steps."""
    if fixed is not None:
        low, high = fixed
        return low, high, nice_step(high - low, 5)
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0, 0.2
    low, high = min(finite), max(finite)
    step = nice_step(high - low or abs(high) or 1.0, 5)
    low, high = math.floor(low / step) * step, math.ceil(high / step) * step
    if high <= low:
        high = low + step
    return low, high, step


def _ticks(low: float, high: float, step: float) -> list[float]:
    count = round((high - low) / step)
    return [low + i * step for i in range(count + 1)]


def _label(value: float) -> str:
    return f"{value:.10g}" if abs(value) >= 1e-9 else "0"


def _document(title: str, body: list[str], legend: Sequence[tuple[str, str, bool]]) -> str:
    height = HEIGHT + HEADER + FOOTER
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:g}" height="{height:g}" '
        f'viewBox="0 0 {WIDTH:g} {height:g}" role="img" aria-label="{escape(title)}">',
        f"<style>{STYLE}</style>",
        f'<rect width="{WIDTH:g}" height="{height:g}" fill="#ffffff"/>',
        f'<text class="title" x="{LEFT:g}" y="18">{escape(title)}</text>',
    ]
    x = LEFT
    for name, colour, dashed in legend:
        dash = ' class="dashed"' if dashed else ""
        parts.append(
            f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="34" y2="34" stroke="{colour}" stroke-width="3"{dash}/>'
        )
        parts.append(f'<text x="{x + 22:.1f}" y="38">{escape(name)}</text>')
        x += 30 + 6.2 * len(name)
    parts.extend(body)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _axes(
    frame: _Frame, x_ticks: list[tuple[float, str]], y_step: float, x_caption: str, y_caption: str
) -> list[str]:
    body = []
    for value in _ticks(frame.y0, frame.y1, y_step):
        y = frame.y(value)
        body.append(
            f'<line class="grid" x1="{frame.left:g}" x2="{frame.right:g}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        body.append(f'<text x="{frame.left - 6:g}" y="{y + 4:.1f}" text-anchor="end">{_label(value)}</text>')
    for at, text in x_ticks:
        body.append(
            f'<text x="{at:.1f}" y="{frame.bottom + 16:.1f}" text-anchor="middle">{escape(text)}</text>'
        )
    body.append(
        f'<line class="axis" x1="{frame.left:g}" x2="{frame.right:g}" '
        f'y1="{frame.bottom:g}" y2="{frame.bottom:g}"/>'
    )
    body.append(
        f'<line class="axis" x1="{frame.left:g}" x2="{frame.left:g}" '
        f'y1="{frame.top:g}" y2="{frame.bottom:g}"/>'
    )
    body.append(
        f'<text x="{(frame.left + frame.right) / 2:.1f}" y="{frame.bottom + 34:.1f}" '
        f'text-anchor="middle">{escape(x_caption)}</text>'
    )
    middle = (frame.top + frame.bottom) / 2
    body.append(
        f'<text x="14" y="{middle:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle:.1f})">{escape(y_caption)}</text>'
    )
    return body


def _guides(frame: _Frame, guides: Sequence[Guide]) -> list[str]:
    body = []
    for guide in guides:
        if guide.vertical:
            if not frame.x0 <= guide.at <= frame.x1:
                continue
            x = frame.x(guide.at)
            body.append(
                f'<line class="guide" x1="{x:.1f}" x2="{x:.1f}" y1="{frame.top:g}" y2="{frame.bottom:g}"/>'
            )
            body.append(f'<text x="{x + 4:.1f}" y="{frame.top + 12:g}">{escape(guide.label)}</text>')
        else:
            if not frame.y0 <= guide.at <= frame.y1:
                continue
            y = frame.y(guide.at)
            body.append(
                f'<line class="guide" x1="{frame.left:g}" x2="{frame.right:g}" y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            body.append(
                f'<text x="{frame.right - 4:g}" y="{y - 4:.1f}" '
                f'text-anchor="end">{escape(guide.label)}</text>'
            )
    return body


def line_chart(
    title: str,
    x_caption: str,
    y_caption: str,
    series: Sequence[Series],
    *,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    guides: Sequence[Guide] = (),
) -> str:
    """Lines sharing axes, as an SVG document."""
    xs = [x for s in series for x, y in zip(s.x, s.y, strict=True) if math.isfinite(y)]
    ys = [y for s in series for y in s.y] + [g.at for g in guides if not g.vertical and y_range is None]
    x0, x1, x_step = _span(xs or [0.0, 1.0], x_range)
    y0, y1, y_step = _span(ys, y_range)
    frame = _Frame(x0, x1, y0, y1)
    x_ticks = [(frame.x(v), _label(v)) for v in _ticks(x0, x1, x_step)]
    body = _axes(frame, x_ticks, y_step, x_caption, y_caption) + _guides(frame, guides)
    legend = []
    for number, line in enumerate(series):
        colour = COLOURS[number % len(COLOURS)]
        legend.append((line.name, colour, line.dashed))
        path: list[str] = []
        pen_up = True
        for x, y in zip(line.x, line.y, strict=True):
            if not (math.isfinite(x) and math.isfinite(y)):
                pen_up = True
                continue
            path.append(f"{'M' if pen_up else 'L'}{frame.x(x):.1f},{frame.y(y):.1f}")
            pen_up = False
            if line.markers:
                body.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="2.5" fill="{colour}"/>')
        if path:
            css = "line dashed" if line.dashed else "line"
            body.append(f'<path class="{css}" stroke="{colour}" d="{" ".join(path)}"/>')
    return _document(title, body, legend)


def bar_chart(
    title: str,
    x_caption: str,
    y_caption: str,
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    *,
    y_range: tuple[float, float] | None = None,
    guides: Sequence[Guide] = (),
) -> str:
    """Bars grouped by category (one colour per series), as an SVG document."""
    ys = [0.0] + [v for _, values in series for v in values]
    y0, y1, y_step = _span(ys, y_range)
    frame = _Frame(0.0, float(len(categories)), y0, y1)
    # Label every category when they fit, else every k-th.
    every = max(
        1,
        math.ceil(
            len(categories) * 7.0 * max((len(c) for c in categories), default=1) / (frame.right - frame.left)
        ),
    )
    x_ticks = [(frame.x(i + 0.5), name) for i, name in enumerate(categories) if i % every == 0]
    body = _axes(frame, x_ticks, y_step, x_caption, y_caption) + _guides(frame, guides)
    slot = (frame.right - frame.left) / max(len(categories), 1)
    width = slot * 0.8 / max(len(series), 1)
    legend = []
    for number, (name, values) in enumerate(series):
        colour = COLOURS[number % len(COLOURS)]
        legend.append((name, colour, False))
        for i, value in enumerate(values):
            if not math.isfinite(value):
                continue
            x = frame.left + i * slot + slot * 0.1 + number * width
            top = frame.y(max(min(value, y1), y0))
            base = frame.y(max(y0, 0.0))
            body.append(
                f'<rect x="{x:.1f}" y="{min(top, base):.1f}" width="{max(width - 1, 1):.1f}" '
                f'height="{abs(base - top):.1f}" fill="{colour}"/>'
            )
    return _document(title, body, legend if len(series) > 1 else [])
