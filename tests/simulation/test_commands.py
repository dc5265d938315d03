"""`skillservice simulate`: a report folder, or one line and an exit status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.cli import main
from app.simulation.commands import without_key

TINY = """\
seed = 3
duration = "10m"
[population]
size = 60
[arrivals]
players_per_second = 0.0
initial_share = 1.0
[sessions]
matches = 100
fixed = true
pause_seconds = 5
match_seconds = 40
[mode]
teams = 2
team_size = 1
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_scenario_gives_a_report_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = write(tmp_path, "tiny.toml", TINY)
    out = tmp_path / "report"
    assert main(["simulate", str(scenario), "--out", str(out), "--key", "secret-value"]) == 0
    written = {path.name for path in out.iterdir()}
    assert "report.md" in written
    assert {"convergence.svg", "fairness.svg", "wait_over_time.svg", "quality.svg"} <= written
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "# Simulation of `tiny` (virtual clock)" in text
    assert "secret-value" not in text
    assert "--key '***'" in text or "--key ***" in text
    assert (
        capsys.readouterr().err.strip().endswith(f"wrote {out / 'report.md'} and {len(written) - 1} charts")
    )


def test_compare_writes_one_report_of_both(tmp_path: Path) -> None:
    a = write(tmp_path, "a.toml", TINY)
    b = write(tmp_path, "b.toml", TINY.replace("team_size = 1", "team_size = 1\nquality_start = 0.2"))
    out = tmp_path / "ab"
    assert main(["simulate", "--compare", str(a), str(b), "--out", str(out)]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert text.startswith("# Comparison: `a` against `b`")
    assert "| mode.quality_start | (default) | 0.2 |" in text


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("size = 60", "size = 1"), "population.size: must be at least 2, got 1"),
        (
            ("[sessions]", "[sessions]\ndecline_probability = 0.1"),
            "sessions.decline_probability: needs the ready check (set mode.accept_timeout_s)",
        ),
        (("team_size = 1", "team_size = 1\nquality_floor = 2"), "mode.quality_floor: Input should be less"),
        (('duration = "10m"', 'duration = "ten"'), "duration: must be seconds or a string"),
        (
            ("team_size = 1", "team_size = 1\nroles = { duelist = 1 }"),
            "population.roles: missing: mode.roles needs every player's role preferences (duelist)",
        ),
        (
            ("team_size = 1", "team_size = 1\nteams_min = 3"),
            "mode.teams_min: teams_min (3) is above teams (2)",
        ),
    ],
)
def test_a_bad_scenario_is_one_line_naming_the_key_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str], expected: str
) -> None:
    scenario = write(tmp_path, "bad.toml", TINY.replace(*edit))
    out = tmp_path / "report"
    assert main(["simulate", str(scenario), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: {scenario}: {expected}")
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--clock", "live"], "error: --clock live needs --url and --key"),
        (["--compare", "{a}", "{b}"], "error: give one SCENARIO, or --compare A B"),
    ],
)
def test_a_command_that_cannot_run_says_why_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    a = write(tmp_path, "a.toml", TINY)
    b = write(tmp_path, "b.toml", TINY)
    given = [arg.format(a=a, b=b) for arg in args]
    assert main(["simulate", str(a), "--out", str(tmp_path / "r"), *given]) == 2
    assert capsys.readouterr().err.strip() == expected


def test_compared_scenarios_share_one_population(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path, "a.toml", TINY)
    b = write(tmp_path, "b.toml", TINY.replace("size = 60", "size = 80"))
    assert main(["simulate", "--compare", str(a), str(b), "--out", str(tmp_path / "r")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {b}: population: must equal {a}'s to compare on one population"
    )


def test_a_population_from_a_mode_needs_the_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = write(tmp_path, "m.toml", TINY.replace("size = 60", 'size = 60\nfrom_mode = "ranked"'))
    assert main(["simulate", str(scenario), "--out", str(tmp_path / "r")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: population.from_mode: reading mode 'ranked''s ratings needs --url and --key"
    )


def test_the_key_is_hidden_from_the_quoted_command() -> None:
    assert without_key(["simulate", "x", "--key", "k1", "--key=k2", "--url", "u"]) == [
        "simulate",
        "x",
        "--key",
        "***",
        "--key=***",
        "--url",
        "u",
    ]


def test_a_comparison_of_a_mode_with_and_without_the_ready_check(tmp_path: Path) -> None:
    a = write(tmp_path, "a.toml", TINY)
    ready = TINY.replace("team_size = 1", "team_size = 1\naccept_timeout_s = 10").replace(
        "[sessions]", "[sessions]\ndecline_probability = 0.1"
    )
    b = write(tmp_path, "b.toml", ready)
    out = tmp_path / "ab"
    assert main(["simulate", "--compare", str(a), str(b), "--out", str(out)]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| mode.accept_timeout_s | (default) | 10 |" in text
    # The ready check's headline row: none for the first, its proposals for the second.
    assert re.search(r"^\| ready check \| – \| [\d,]+ proposals, [\d.]+% failed", text, re.MULTILINE)


def test_a_scenario_with_leavers_reports_them(tmp_path: Path) -> None:
    leaving = write(tmp_path, "leave.toml", TINY.replace("[sessions]", "[sessions]\nleave_probability = 0.2"))
    out = tmp_path / "virtual"
    assert main(["simulate", str(leaving), "--out", str(out), "--no-baselines"]) == 0
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "## Leaving and backfill" in text
    assert re.search(r"^\| leaving \| [\d,]+ players left [\d,]+ games", text, re.MULTILINE)
