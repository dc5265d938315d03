"""The report of one run: every section a table and a chart, the targets first."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from app.simulation.markdown import Result
from app.simulation.report import single
from app.simulation.virtual import run_virtual
from tests.simulation.helpers import population, scenario


def result() -> Result:
    regions = [
        {"name": "eu", "share": 0.5, "latency_ms": 30, "latency_sd_ms": 5, "others": {"na": 80}},
        {"name": "na", "share": 0.5, "latency_ms": 30, "latency_sd_ms": 5, "others": {"eu": 80}},
    ]
    tiny = scenario(regions=regions, mode={"max_latency_ms": 60, "max_latency_relaxed_ms": 150})
    players = population(tiny)
    return Result(
        tiny,
        run_virtual(tiny, players),
        run_virtual(tiny, players, "random"),
        players.skill.copy(),
        "skillservice simulate tiny.toml --out report",
    )


def test_the_report_links_every_chart_it_writes_and_answers_the_targets() -> None:
    report = single(result())
    text = report.markdown
    linked = set(re.findall(r"!\[[^\]]*\]\(([^)]+\.svg)\)", text))
    assert linked == set(report.charts)
    assert {"convergence.svg", "fairness.svg", "draws_accumulated.svg", "calibration.svg"} <= linked
    for svg in report.charts.values():
        ET.fromstring(svg)
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    assert headings[:2] == ["Targets", "Headline"]
    assert {"Time to match", "Match quality", "Fairness", "Convergence", "Calibration"} <= set(headings)
    for target in ("win 35–65%", "above Elo's at every checkpoint", "fewer games than random pairing"):
        assert re.search(
            rf"^\| [^|]*{re.escape(target)}[^|]* \| .+ \| (yes|\*\*no\*\*) \|$", text, re.MULTILINE
        )
    # The regions' waits have a row each, and the command that made it is quoted.
    assert re.search(r"^\| eu \| \d+ \|", text, re.MULTILINE)
    assert re.search(r"^\| na \| \d+ \|", text, re.MULTILINE)
    assert "`skillservice simulate tiny.toml --out report`" in text
    assert "Ready check" not in headings


def test_a_ready_check_gets_its_table_of_failures_and_extra_waits() -> None:
    declining = scenario(
        mode={"teams": 2, "team_size": 1, "accept_timeout_s": 10}, sessions={"decline_probability": 0.1}
    )
    players = population(declining)
    run = run_virtual(declining, players)
    text = single(
        Result(declining, run, None, players.skill.copy(), "skillservice simulate ready.toml")
    ).markdown
    section = text.split("## Ready check", 1)[1].split("\n## ", 1)[0]
    failed = re.search(
        r"^\| failed \(a player declined\) \| ([\d,]+) \(([\d.]+)%\) \|$", section, re.MULTILINE
    )
    assert failed is not None
    assert int(failed.group(1).replace(",", "")) == run.proposals_failed > 0
    assert float(failed.group(2)) == round(100 * run.proposals_failed / run.proposals, 1)
    assert re.search(
        r"^\| their extra wait \| p50 [\d.]+ s, p90 [\d.]+ s, p99 [\d.]+ s \|$", section, re.MULTILINE
    )
    assert re.search(r"^\| ready check \| [\d,]+ proposals, [\d.]+% failed", text, re.MULTILINE)


def test_leaving_gets_its_table_of_games_left_backfills_and_games_ended_short() -> None:
    leaving = scenario(mode={"teams": 2, "team_size": 2}, sessions={"leave_probability": 0.2}, duration="10m")
    players = population(leaving)
    run = run_virtual(leaving, players)
    text = single(
        Result(leaving, run, None, players.skill.copy(), "skillservice simulate leave.toml")
    ).markdown
    section = text.split("## Leaving and backfill", 1)[1].split("\n## ", 1)[0]
    games_left = re.search(
        r"^\| games a player left \| ([\d,]+) \(([\d.]+)% of the matches\) \|$", section, re.M
    )
    assert games_left is not None
    assert int(games_left.group(1).replace(",", "")) == run.games_left > 0
    assert float(games_left.group(2)) == round(100 * run.games_left / run.matches, 1)
    filled = re.search(r"^\| seats filled \| ([\d,]+) \([\d.]+%\), in ([\d,]+) fills \|$", section, re.M)
    assert filled is not None
    assert (int(filled.group(1)), int(filled.group(2))) == (len(run.fill_wait), len(run.fill_quality))
    assert re.search(
        r"^\| time to fill a seat \| p50 [\d.]+ s, p90 [\d.]+ s, p99 [\d.]+ s \|$", section, re.M
    )
    assert re.search(
        r"^\| fill quality \(the completed game\) \| mean 0\.\d{3}, p10 0\.\d{3} \(new matches: mean",
        section,
        re.M,
    )
    short = re.search(r"^\| games that ended short [^|]+\| ([\d,]+) \(", section, re.M)
    assert short is not None
    assert int(short.group(1).replace(",", "")) == run.games_short
    assert "leaves a match in play with probability 0.2" in text
    assert re.search(r"^\| leaving \| [\d,]+ players left [\d,]+ games .+ ended short \|$", text, re.M)
