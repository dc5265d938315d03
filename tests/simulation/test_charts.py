"""The report's SVG charts: well-formed documents that draw what they are given."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from app.simulation.charts import Guide, Series, bar_chart, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def parse(document: str) -> ET.Element:
    return ET.fromstring(document)


def texts(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}text")]


def test_a_line_chart_draws_each_series_and_breaks_at_missing_values() -> None:
    root = parse(
        line_chart(
            "Waits <by> hour",
            "hours",
            "seconds",
            [
                Series("p50", [0, 1, 2, 3], [1.0, 2.0, math.nan, 4.0]),
                Series("p90", [0, 1], [5.0, 6.0], dashed=True),
            ],
            guides=[
                Guide(3.0, "three"),
                Guide(1.5, "noon", vertical=True),
                Guide(10.0, "off the chart", vertical=True),
            ],
        )
    )
    paths = [p for p in root.iter(f"{SVG}path")]
    assert len(paths) == 2
    first = paths[0].get("d", "")
    assert first.count("M") == 2 and first.count("L") == 1  # NaN lifts the pen
    assert "dashed" in (paths[1].get("class") or "")
    labels = texts(root)
    assert {"Waits <by> hour", "hours", "seconds", "p50", "p90", "three", "noon"} <= set(labels)
    assert "off the chart" not in labels


def test_a_line_chart_keeps_a_fixed_range() -> None:
    root = parse(line_chart("c", "x", "y", [Series("s", [0.0, 1.0], [0.2, 0.4])], y_range=(0.0, 1.0)))
    assert "1" in texts(root) and "0" in texts(root)


def test_a_bar_chart_draws_a_bar_per_value_and_skips_missing_ones() -> None:
    root = parse(
        bar_chart("c", "x", "y", ["a", "b", "c"], [("p50", [1.0, 2.0, 3.0]), ("p90", [2.0, math.nan, 5.0])])
    )
    bars = [r for r in root.iter(f"{SVG}rect")][1:]  # the first is the background
    assert len(bars) == 5
    assert {"a", "b", "c", "p50", "p90"} <= set(texts(root))
    heights = [float(bar.get("height", "0")) for bar in bars]
    assert heights[2] > heights[1] > heights[0] > 0
