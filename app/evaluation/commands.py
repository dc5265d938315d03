"""The `python -m app evaluate-*` commands: argument parsing and printed reports, with a
progress bar on stderr while each set is loaded and evaluated (app/progress.py)."""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from app.evaluation import chgk, drift, histories, predictive, synthetic
from app.evaluation.datasets import ENVIRONMENT, NOT_SHIPPED, DatasetMissing, named, root
from app.evaluation.tournaments import Tournament, TournamentParameters, compare, table
from app.progress import Bar, Progress, end_line, run_watched
from app.rating.history.tuning import fit_hyperparameters

T = TypeVar("T")
# Seconds a dataset takes to load, for the bar's pace while it does (docs/benchmarks.md,
# "Long work's progress").
LOAD_S = 1.0

SOURCES = ("chgk-ec", "chgk-rating", "synthetic")
DATASETS_HELP = (
    f"directory of the datasets (default: ${ENVIRONMENT}; the sets the repository ships are "
    "read from tests/data/datasets when it lacks them); see docs/datasets.md"
)


def add_datasets_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datasets", type=Path, default=None, metavar="DIR", help=DATASETS_HELP)


def default_sources(every: Sequence[str], flag: Path | None) -> list[str]:
    """All of `every` when a datasets directory is named, else those the repository ships."""
    return list(every) if named(flag) else [s for s in every if s not in NOT_SHIPPED]


def reported(run: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> int:
    """Run a command; a missing dataset is one line on stderr and exit status 2."""
    try:
        run(args)
    except DatasetMissing as exc:
        end_line()
        print(str(exc), file=sys.stderr)
        return 2
    return 0


def add_tournaments_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "evaluate-tournaments",
        help="replay team tournaments and compare TrueSkill with seed 002's tie layer (wrong pairs, %%)",
    )
    parser.add_argument(
        "--source",
        choices=SOURCES,
        action="append",
        help="default: all three, chgk-rating only when a datasets directory is named",
    )
    add_datasets_argument(parser)
    parser.add_argument("--draw-probability", type=float, default=TournamentParameters().draw_probability)
    parser.add_argument("--synthetic-tournaments", type=int, default=400)
    parser.add_argument("--synthetic-max-teams", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)


def load(source: str, args: argparse.Namespace, datasets: Path | None) -> list[Tournament]:
    if source == "chgk-ec" and datasets is not None:
        return chgk.european_cup(datasets / "chgk")
    if source == "chgk-rating" and datasets is not None:
        return chgk.rating_site(datasets / "chgk")
    return synthetic.tournaments(
        args.synthetic_tournaments, max_teams=args.synthetic_max_teams, seed=args.seed
    )


def run_tournaments(args: argparse.Namespace) -> None:
    sources = args.source or default_sources(SOURCES, args.datasets)
    # Every dataset is found before any work, so a missing one stops the command at once.
    roots = {s: None if s == "synthetic" else root(s, args.datasets) for s in sources}
    parameters = TournamentParameters(draw_probability=args.draw_probability)
    print(
        f"mu={parameters.mu:g} sigma={parameters.sigma:g} beta={parameters.beta:g} tau={parameters.tau:g} "
        f"draw_probability={parameters.draw_probability:g}\n"
    )
    for source, datasets in roots.items():
        started = time.perf_counter()

        def work(
            progress: Progress, source: str = source, datasets: Path | None = datasets
        ) -> tuple[list[Tournament], str]:
            with progress.part(0.1, "loading", expect=LOAD_S):
                tournaments = load(source, args, datasets)
            with progress.part(1.0, "replaying") as replaying:
                return tournaments, table(compare(tournaments, parameters, replaying.update))

        tournaments, shown = watched(source, work)
        teams = sum(len(t.rosters) for t in tournaments)
        print(f"## {source}: {len(tournaments)} tournaments, {teams} team entries")
        print(shown)
        print(f"({time.perf_counter() - started:.0f} s)\n", flush=True)


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `low` (argparse names the option)."""

    def whole(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value

    return whole


def add_fit_history_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "fit-history",
        help="choose TrueSkill Through Time's sigma and gamma (and p_draw) by log evidence",
    )
    parser.add_argument("--source", choices=sorted(histories.LOADERS), default="chess")
    add_datasets_argument(parser)
    parser.add_argument("--fit-p-draw", action="store_true", help="fit the draw probability too")
    parser.add_argument("--iterations", type=at_least(1), default=10, help="sweeps per evaluation")
    parser.add_argument("--rounds", type=at_least(0), default=2)
    parser.add_argument("--limit", type=at_least(0), default=0, help="only the first N games (0: all)")


def watched(label: str, work: Callable[[Progress], T]) -> T:
    """Run `work(progress)` with its progress on a bar on stderr."""
    bar = Bar(label[:10])
    result = run_watched(work, bar.show)
    bar.finish()
    return result


def run_fit_history(args: argparse.Namespace) -> None:
    folder = root(args.source, args.datasets)

    def work(progress: Progress) -> tuple[histories.MatchHistory, int, Any]:
        with progress.part(0.05, "loading", expect=LOAD_S):
            data = histories.LOADERS[args.source](folder)
        limit = args.limit or len(data.composition)
        draws = data.draw_share
        with progress.part(1.0, "fitting") as fitting:
            return (
                data,
                limit,
                fit_hyperparameters(
                    data.composition[:limit],
                    data.results[:limit],
                    data.times[:limit],
                    p_draw=draws if draws > 0.0 else 0.0,
                    fit_p_draw=args.fit_p_draw,
                    iterations=args.iterations,
                    rounds=args.rounds,
                    progress=fitting.update,
                ),
            )

    data, limit, (best, path) = watched(args.source, work)
    draws = data.draw_share
    print(f"{data.name}: {limit} games, draws {draws:.1%}; beta = 1, mu = 0\n", flush=True)
    print("| trial | sigma | gamma | p_draw | log evidence |")
    print("|---|---|---|---|---|")
    for number, trial in enumerate(path, 1):
        cells = (
            f"{trial.sigma:.4g}",
            f"{trial.gamma:.4g}",
            f"{trial.p_draw:.4g}",
            f"{trial.log_evidence:.3f}",
        )
        print(f"| {number} | {' | '.join(cells)} |")
    print(
        f"\nbest: sigma={best.sigma:.4g} gamma={best.gamma:.4g} p_draw={best.p_draw:.4g} "
        f"log evidence={best.log_evidence:.3f} (start {path[0].log_evidence:.3f})"
    )


def add_fit_drift_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "fit-drift",
        help="choose a mode's drift_per_day by the online evidence of the service's ratings",
    )
    parser.add_argument("--source", choices=("football", "atp"), action="append", help="default: football")
    add_datasets_argument(parser)
    parser.add_argument("--rounds", type=at_least(0), default=16, help="golden-section steps")


def run_fit_drift(args: argparse.Namespace) -> None:
    for source in args.source or ["football"]:
        folder = root(source, args.datasets)
        started = time.perf_counter()

        def work(
            progress: Progress, source: str = source, folder: Path = folder
        ) -> tuple[histories.MatchHistory, drift.Evidence, list[drift.Evidence], drift.Evidence]:
            with progress.part(0.05, "loading", expect=LOAD_S):
                data = histories.LOADERS[source](folder)
            with progress.part(0.95, "fitting") as fitting:
                best, trials = drift.fit(data, args.rounds, fitting.update)
            with progress.part(1.0, expect=LOAD_S):
                return data, best, trials, drift.evidence(data, 0.0)

        data, best, trials, none = watched(source, work)
        print(f"## {source}: {len(data.times):,} games, draws {data.draw_share:.1%}; mode defaults")
        print("| drift_per_day | log evidence / game, first 70% | last 30% | all |")
        print("|---|---|---|---|")
        for trial in (none, *sorted(trials, key=lambda t: t.gamma)):
            print(f"| {trial.gamma:.4g} | {trial.train:.5f} | {trial.test:.5f} | {trial.whole:.5f} |")
        print(
            f"\nbest drift_per_day={best.gamma:.4g}: per game {best.train - none.train:+.5f} (first 70%), "
            f"{best.test - none.test:+.5f} (last 30%), {best.whole - none.whole:+.5f} (all) over no drift "
            f"({time.perf_counter() - started:.0f} s)\n",
            flush=True,
        )


# Hyperparameters per dataset: the paper's ATP values (seed 001 §2.4: sigma 1.6, gamma
# 0.036); football's from `fit-history --source football --fit-p-draw --limit 34664` (its
# first 70%: sigma 3.998, gamma 0.008652, p_draw 0.2842). Chess: the package's defaults.
PREDICTIVE_DEFAULTS = {
    "atp": predictive.Parameters(sigma=1.6, gamma=0.036, p_draw=0.0),
    "football": predictive.Parameters(sigma=4.0, gamma=0.0087, p_draw=0.284),
    "chess": predictive.Parameters(sigma=1.6, gamma=0.036, p_draw=0.3),
}


def add_predictive_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "evaluate-history",
        help="Elo, TrueSkill and TrueSkill Through Time: prior predictions of the last 30%% (seed 001 §3.9)",
    )
    parser.add_argument(
        "--source",
        choices=sorted(PREDICTIVE_DEFAULTS),
        action="append",
        help="default: atp and football, atp only when a datasets directory is named",
    )
    add_datasets_argument(parser)
    parser.add_argument("--sigma", type=float, help="prior sigma (default: per dataset)")
    parser.add_argument("--gamma", type=float, help="skill drift per day (default: per dataset)")
    parser.add_argument("--p-draw", type=float, help="draw probability (default: per dataset)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N games (0: all)")
    parser.add_argument(
        "--model",
        choices=predictive.MODELS,
        action="append",
        help="default: all three (TTT, one sweep of the whole history per predicted day, is the slow one)",
    )
    parser.add_argument(
        "--sweep-every",
        type=int,
        default=1,
        metavar="N",
        help="TTT sweeps once per N predicted days (default 1, the paper's procedure; the days "
        "between get only the online update)",
    )


def _evaluated(
    args: argparse.Namespace, source: str, datasets: Path, settings: predictive.Parameters, progress: Progress
) -> tuple[histories.MatchHistory, list[predictive.Score]]:
    """The set loaded (its first `--limit` games) and its models' scores."""
    with progress.part(0.05, "loading", expect=LOAD_S):
        data = histories.LOADERS[source](datasets)
    if args.limit:
        data = histories.MatchHistory(
            data.name, data.composition[: args.limit], data.results[: args.limit], data.times[: args.limit]
        )
    models = args.model or predictive.MODELS
    with progress.part(1.0) as evaluating:
        return data, predictive.evaluate(data, settings, evaluating, models, args.sweep_every)


def run_predictive(args: argparse.Namespace) -> None:
    sources = args.source or default_sources(("atp", "football"), args.datasets)
    roots = {source: root(source, args.datasets) for source in sources}
    for source, datasets in roots.items():
        started = time.perf_counter()
        base = PREDICTIVE_DEFAULTS[source]
        settings = predictive.Parameters(
            sigma=args.sigma if args.sigma is not None else base.sigma,
            gamma=args.gamma if args.gamma is not None else base.gamma,
            p_draw=args.p_draw if args.p_draw is not None else base.p_draw,
        )
        data, scores = watched(source, functools.partial(_evaluated, args, source, datasets, settings))
        print(
            f"## {source}: {len(data.composition):,} games; "
            f"sigma={settings.sigma:g} gamma={settings.gamma:g} "
            f"p_draw={settings.p_draw:g} beta={settings.beta:g}",
            flush=True,
        )
        print(predictive.table(scores))
        print(f"({time.perf_counter() - started:.0f} s)\n", flush=True)
