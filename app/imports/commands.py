"""`python -m app import | replay | smooth`: history work from the command line, with a
progress bar. They work on the database directly, beside a running service or without one."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.config import Settings
from app.imports.reading import Skip
from app.imports.service import import_file
from app.jobs import service as jobs
from app.jobs import smooth
from app.progress import Bar, Progress

ATP_RECIPE = """ATP singles (not shipped: CC BY-NC-SA, see docs/datasets.md), walkovers and the 199999
placeholder dropped, from the atp/ folder of your datasets directory:
  python -m app import --mode atp --column played_at=date --column winner=winner_id \\
    --column loser=loser_id --skip 'score~W/O|Walkover' --skip 'winner_id~^199999$' \\
    --skip 'loser_id~^199999$' "$DATASETS_DIR/atp/atp_singles_1968_2024.csv.gz\""""


def add_parsers(commands: Any) -> None:
    importing = commands.add_parser(
        "import",
        help="import historical matches from CSV or JSONL, then replay the mode",
        description="Import historical matches (CSV or JSONL, optionally .gz) into a mode in one "
        "transaction, then replay the mode so they are rated. See docs/import.md.",
        epilog=ATP_RECIPE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    importing.add_argument("file", type=Path)
    importing.add_argument("--mode", required=True)
    importing.add_argument(
        "--column",
        action="append",
        default=[],
        type=_column,
        metavar="OURS=THEIRS",
        help="read our column from theirs",
    )
    importing.add_argument(
        "--skip",
        action="append",
        default=[],
        type=_skip,
        metavar="COLUMN~REGEX",
        help="drop rows whose column matches",
    )
    importing.add_argument("--no-replay", action="store_true", help="load only; rate later with a replay")
    replaying = commands.add_parser("replay", help="re-rate a mode's whole history")
    replaying.add_argument("--mode", required=True)
    smoothing = commands.add_parser("smooth", help="TrueSkill Through Time learning curves for a mode")
    smoothing.add_argument("--mode", required=True)
    smoothing.add_argument(
        "--gamma", type=float, default=None, help="drift per day (default: the mode's tau)"
    )
    smoothing.add_argument("--sigma", type=float, default=None, help="prior sigma (default: the mode's)")
    smoothing.add_argument(
        "--iterations", type=int, default=smooth.ITERATIONS, help="cap on sweeps (default: %(default)s)"
    )
    smoothing.add_argument(
        "--epsilon",
        type=float,
        default=smooth.EPSILON,
        help="distance to the fixed point to reach (default: %(default)s)",
    )


def _column(pair: str) -> tuple[str, str]:
    ours, sep, theirs = pair.partition("=")
    if not sep or not ours or not theirs:
        raise argparse.ArgumentTypeError(f"{pair!r}: expected OURS=THEIRS")
    return ours, theirs


def _skip(text: str) -> Skip:
    try:
        return Skip.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


async def _with_sessions(
    settings: Settings, database_url: str, work: Callable[[async_sessionmaker[AsyncSession]], Awaitable[Any]]
) -> Any:
    from app.db.engine import build_engine, build_sessionmaker

    engine = build_engine(settings, database_url)
    try:
        return await work(build_sessionmaker(engine))
    finally:
        await engine.dispose()


async def watched(bar: Bar, work: Callable[[Progress], Awaitable[Any]]) -> Any:
    """Run `work(progress)` with its progress on `bar`, moving at least every EVERY_S."""
    progress: Progress

    async def show(value: float) -> None:
        bar.show(value, progress.label)

    progress = Progress(show)
    async with progress.watched():
        result = await work(progress)
    bar.finish()
    return result


def run(args: argparse.Namespace, settings: Settings, database_url: str, bar: Bar) -> int:
    """Run the command, its progress on `bar`; its exit status."""
    if args.command == "import":
        # Rejected rows (ImportRejected) and unreadable files end the command through the
        # CLI's error lines (app/cli.py); nothing was written.
        columns = dict(args.column)
        skips = args.skip
        result = asyncio.run(
            _with_sessions(
                settings,
                database_url,
                lambda sessions: watched(
                    bar,
                    lambda progress: import_file(
                        sessions, args.file, args.mode, columns, skips, not args.no_replay, progress
                    ),
                ),
            )
        )
        if result.already_recorded:
            # Stderr, beside the progress bars: stdout stays one JSON document.
            print(
                f"{result.already_recorded} of the file's matches were already recorded; "
                f"{result.matches} new",
                file=sys.stderr,
            )
        if result.erased_since:
            print(f"{result.erased_since} rows name players erased since; skipped", file=sys.stderr)
        print(json.dumps(result.__dict__, indent=2, default=str))
        return 0

    async def work(sessions: async_sessionmaker[AsyncSession], progress: Progress) -> dict[str, Any]:
        if args.command == "replay":
            return await jobs.run_replay(sessions, args.mode, progress)
        options = {
            "gamma": args.gamma,
            "sigma": args.sigma,
            "iterations": args.iterations,
            "epsilon": args.epsilon,
        }
        return await jobs.run_smooth(sessions, args.mode, "cli", options, progress)

    result = asyncio.run(
        _with_sessions(
            settings, database_url, lambda sessions: watched(bar, lambda progress: work(sessions, progress))
        )
    )
    print(json.dumps(result, indent=2))
    return 0
