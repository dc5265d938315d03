"""The `python -m app evaluate-*` commands: argument parsing and printed reports."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from app.evaluation import chgk, synthetic
from app.evaluation.tournaments import Parameters, Tournament, compare, table

# ../shared beside the repository, or SHARED_DIR (as the tests read it).
SHARED = Path(os.environ.get("SHARED_DIR") or Path(__file__).resolve().parents[3] / "shared")
DEFAULT_CHGK = SHARED / "datasets" / "chgk"
SOURCES = ("chgk-ec", "chgk-rating", "synthetic")


def add_tournaments_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "evaluate-tournaments",
        help="replay team tournaments and compare TrueSkill with seed 002's tie layer (wrong pairs, %%)",
    )
    parser.add_argument("--source", choices=SOURCES, action="append", help="default: all three")
    parser.add_argument("--chgk-dir", type=Path, default=DEFAULT_CHGK, help="../shared/datasets/chgk")
    parser.add_argument("--draw-probability", type=float, default=Parameters().draw_probability)
    parser.add_argument("--synthetic-tournaments", type=int, default=400)
    parser.add_argument("--synthetic-max-teams", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)


def load(source: str, args: argparse.Namespace) -> list[Tournament]:
    if source == "chgk-ec":
        return chgk.european_cup(args.chgk_dir)
    if source == "chgk-rating":
        return chgk.rating_site(args.chgk_dir)
    return synthetic.tournaments(
        args.synthetic_tournaments, max_teams=args.synthetic_max_teams, seed=args.seed
    )


def run_tournaments(args: argparse.Namespace) -> None:
    parameters = Parameters(draw_probability=args.draw_probability)
    print(
        f"mu={parameters.mu:g} sigma={parameters.sigma:g} beta={parameters.beta:g} tau={parameters.tau:g} "
        f"draw_probability={parameters.draw_probability:g}\n"
    )
    for source in args.source or SOURCES:
        started = time.perf_counter()
        tournaments = load(source, args)
        teams = sum(len(t.rosters) for t in tournaments)
        print(f"## {source}: {len(tournaments)} tournaments, {teams} team entries")
        print(table(compare(tournaments, parameters)))
        print(f"({time.perf_counter() - started:.0f} s)\n", flush=True)
