"""`skillservice simulate`: run a scenario (or compare two) and write the report folder.

    skillservice simulate SCENARIO --out DIR [--clock virtual|live] [--url URL --key KEY]
    skillservice simulate --compare A.toml B.toml --out DIR

A scenario file's error is one line naming the key, exit status 2 (as a missing --url for the
live clock); a service that cannot be reached or refuses a call is exit status 1. The report
(DIR/report.md and its SVG charts) is written only once every run is done.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from app.client import ApiError
from app.progress import Bar
from app.simulation import population as populations
from app.simulation.checked import ScenarioError
from app.simulation.comparison import compare
from app.simulation.live import read_ratings, run_live
from app.simulation.markdown import Report, Result
from app.simulation.population import Population, Streams
from app.simulation.reading import read
from app.simulation.report import single
from app.simulation.scenario import Scenario
from app.simulation.virtual import run_virtual

USAGE, FAILURE = 2, 1


class Refused(Exception):
    """The command cannot run as asked: one line, and an exit status."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "simulate",
        help="simulate a mode's matchmaking and rating loop and write a report (docs/simulator.md)",
        description="Run a scenario (TOML, docs/simulator.md) through the matchmaking and rating loop, on "
        "simulated time (virtual) or against a running service (live), and write DIR/report.md with SVG "
        "charts.",
    )
    parser.add_argument("scenario", type=Path, nargs="?", help="the scenario file")
    parser.add_argument(
        "--compare", type=Path, nargs=2, metavar=("A", "B"), help="two scenarios on one population and seed"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="the report folder (created)")
    parser.add_argument("--clock", choices=("virtual", "live"), default="virtual")
    parser.add_argument("--url", help="the service (live clock; or a population read from a mode)")
    parser.add_argument("--key", help="an API key: admin for the live clock, read for a population")
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="skip the random-pairing run (Elo costs nothing and stays)",
    )


def run(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """The command; the exit status."""
    try:
        _simulate(args, "skillservice " + " ".join(shlex.quote(a) for a in without_key(argv)))
    except Refused as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.status
    return 0


def without_key(argv: Sequence[str]) -> list[str]:
    """The command line as the report quotes it: the API key's value hidden."""
    shown: list[str] = []
    for number, arg in enumerate(argv):
        if number and argv[number - 1] == "--key":
            shown.append("***")
        elif arg.startswith("--key="):
            shown.append("--key=***")
        else:
            shown.append(arg)
    return shown


def _simulate(args: argparse.Namespace, command: str) -> None:
    if (args.scenario is None) == (args.compare is None):
        raise Refused("give one SCENARIO, or --compare A B")
    if args.clock == "live" and not (args.url and args.key):
        raise Refused("--clock live needs --url and --key")
    paths = [args.scenario] if args.scenario is not None else list(args.compare)
    scenarios = [_read(path) for path in paths]
    if len(scenarios) == 2 and scenarios[0].population != scenarios[1].population:
        raise Refused(f"{paths[1]}: population: must equal {paths[0]}'s to compare on one population")
    if len(scenarios) == 2 and scenarios[0].seed != scenarios[1].seed:
        raise Refused(f"{paths[1]}: seed: must equal {paths[0]}'s to compare on one seed")
    population = _population(scenarios[0], args)
    results = [
        _result(scenario, population, args, command, compared=len(scenarios) == 2) for scenario in scenarios
    ]
    report = single(results[0]) if len(results) == 1 else compare(results[0], results[1])
    _write(report, args.out)
    print(f"wrote {args.out / 'report.md'} and {len(report.charts)} charts", file=sys.stderr)


def _read(path: Path) -> Scenario:
    try:
        return read(path)
    except ScenarioError as exc:
        raise Refused(f"{path}: {exc}") from None


def _population(scenario: Scenario, args: argparse.Namespace) -> Population:
    rated: list[tuple[float, float]] = []
    mode = scenario.population.from_mode
    if mode is not None:
        if not (args.url and args.key):
            raise Refused(f"population.from_mode: reading mode {mode!r}'s ratings needs --url and --key")
        try:
            rated = read_ratings(args.url, args.key, mode)
        except (ApiError, httpx.HTTPError) as exc:
            raise Refused(f"population.from_mode: cannot read mode {mode!r}: {exc}", FAILURE) from None
    try:
        return populations.build(scenario, Streams.of(scenario.seed).population, rated)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def _result(
    scenario: Scenario, population: Population, args: argparse.Namespace, command: str, compared: bool
) -> Result:
    bar = Bar(scenario.name[:10], 1.0)
    if args.clock == "live":
        try:
            run = run_live(scenario, population, args.url, args.key, bar.set)
        except (ApiError, httpx.HTTPError) as exc:
            raise Refused(f"the service at {args.url}: {exc}", FAILURE) from None
    else:
        run = run_virtual(scenario, population, "quality", bar.set)
    bar.finish()
    random = None
    if scenario.baselines.random_pairing and not args.no_baselines and not compared:
        baseline = Bar("random", 1.0)
        random = run_virtual(scenario, population, "random", baseline.set)
        baseline.finish()
    return Result(scenario, run, random, population.skill.copy(), command)


def _write(report: Report, folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, svg in report.charts.items():
            (folder / name).write_text(svg, encoding="utf-8")
        (folder / "report.md").write_text(report.markdown, encoding="utf-8")
    except OSError as exc:
        raise Refused(f"--out {folder}: {exc.strerror or exc}", FAILURE) from None
