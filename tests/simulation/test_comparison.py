"""Two configurations on one population, side by side."""

from __future__ import annotations

import re

from app.simulation.comparison import compare, differences
from app.simulation.markdown import Result
from app.simulation.virtual import run_virtual
from tests.simulation.helpers import population, scenario


def test_a_comparison_names_what_differs_and_shows_both_runs() -> None:
    strict = scenario("strict", mode={"quality_start": 0.44, "relax_seconds": 120})
    loose = scenario("loose", mode={"quality_start": 0.2})
    players = population(strict)
    results = [
        Result(s, run_virtual(s, players), None, players.skill.copy(), "skillservice simulate --compare a b")
        for s in (strict, loose)
    ]
    assert differences(strict, loose) == [
        ["mode.quality_start", "0.44", "0.2"],
        ["mode.relax_seconds", "120", "(default)"],
    ]
    report = compare(*results)
    text = report.markdown
    assert text.startswith("# Comparison: `strict` against `loose`")
    assert set(re.findall(r"\(([^)]+\.svg)\)", text)) == set(report.charts)
    rows = dict(
        (cells[0], cells[1:])
        for line in text.splitlines()
        if (cells := [c.strip() for c in line.split("|")[1:-1]])
    )
    # A stricter start makes the first matches wait for the relaxation: longer waits.
    strict_p90 = float(re.search(r"p90 ([\d.]+) s", rows["time to match"][0]).group(1))  # type: ignore[union-attr]
    loose_p90 = float(re.search(r"p90 ([\d.]+) s", rows["time to match"][1]).group(1))  # type: ignore[union-attr]
    assert strict_p90 > loose_p90
    assert "games to a rank correlation of 0.8" in rows
