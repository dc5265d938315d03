"""Replay of ATP singles (193,651 matches), end to end, as ops run it (issue #23, item 5).

    python bench/replay.py [--datasets DIR] [--runs 3] [--database-url URL] [--profile]

1. A database: the embedded PostgreSQL of `python -m app serve` (bench/serving.py), or a
   throw-away database created on the server of `--database-url` (dropped at the end).
2. `python -m app import --no-replay` of ATP singles (the recipe of docs/import.md): the
   matches loaded, not rated. ATP is not shipped (docs/datasets.md): it is read from
   `--datasets DIR` or `$DATASETS_DIR` (DIR/atp/atp_singles_1968_2024.csv.gz).
3. `python -m app replay --mode atp`, RUNS times: the whole command's wall seconds (process
   start to exit), and the replay's own split (read, rate, write) from its output. The first
   replay rates what the import loaded; the next ones re-rate a rated mode.
4. The baseline: PostgreSQL alone copying the two tables a replay rewrites into new ones
   and indexing them (`copy_alone`), in the same run.
5. With `--profile`, one more replay in this process under cProfile: where the time goes,
   in this process (the rating runs in a worker thread, profiled apart) and waiting on
   PostgreSQL.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module, which psycopg imports:
# bench modules are imported as a package from the repository root.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import os
import pstats
import secrets
import statistics
import subprocess
import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg

from app.evaluation.datasets import ENVIRONMENT, DatasetMissing, root
from app.imports.commands import ATP_RECIPE
from bench.serving import serving

MODE = "atp"


def recipe(datasets: Path) -> list[str]:
    """The import command of the ATP recipe (app/imports/commands.py), without the replay."""
    import shlex

    words = shlex.split(ATP_RECIPE.split("python -m app import", 1)[1].replace("\\\n", " "))
    return ["import", "--no-replay", *words[:-1], str(datasets / "atp" / "atp_singles_1968_2024.csv.gz")]


def cli(url: str, *args: str) -> tuple[float, dict[str, object]]:
    env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "app", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"python -m app {' '.join(args)} failed:\n{done.stderr}")
    return seconds, json.loads(done.stdout)


@contextlib.contextmanager
def database(server: str | None) -> Iterator[str]:
    if server is None:
        with serving("replay") as served:
            yield served.database_url
        return
    name = f"bench_replay_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        url = urlunsplit(urlsplit(server)._replace(path=f"/{name}"))
        env = {**os.environ, "DATABASE_URL": url}
        subprocess.run(
            [sys.executable, "-m", "app", "migrate"], cwd=ROOT, env=env, check=True, capture_output=True
        )
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_alone(url: str) -> float:
    """PostgreSQL alone doing the least a replay's write does: copy matches and match_players
    into new tables, build their indexes and commit (no staging, no join, no Python). Seconds,
    the new tables dropped after."""
    started = time.perf_counter()
    with psycopg.connect(url) as conn:
        conn.execute("SET LOCAL maintenance_work_mem = '256MB'")  # as app.db.bulk.fresh_table
        for table in ("match_players", "matches"):
            conn.execute(f"CREATE TABLE bench_{table} AS SELECT * FROM {table}")
            for (definition,) in conn.execute(
                "SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = CAST(%s AS regclass)",
                (table,),
            ).fetchall():
                conn.execute(
                    definition.replace(" INDEX ", " INDEX bench_", 1).replace(
                        f" ON public.{table} ", f" ON bench_{table} "
                    )
                )
    seconds = time.perf_counter() - started
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE bench_match_players, bench_matches")
    return seconds


def profile(url: str) -> str:
    from app.config import Settings
    from app.db.engine import build_engine, build_sessionmaker
    from app.jobs import service

    async def run() -> dict[str, object]:
        engine = build_engine(Settings(database_url=url), url)
        try:
            return await service.run_replay(build_sessionmaker(engine), MODE)
        finally:
            await engine.dispose()

    profiler = cProfile.Profile()
    cpu = time.process_time()
    profiler.enable()
    result = asyncio.run(run())
    profiler.disable()
    cpu = time.process_time() - cpu
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
    head = f"in-process replay: {result['seconds']}, CPU of this process (all threads) {cpu:.2f} s"
    return f"{head}\n{out.getvalue()}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", type=Path, metavar="DIR", help=f"holds atp/ (default: ${ENVIRONMENT})")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--database-url", help="a PostgreSQL server to create a throw-away database on")
    parser.add_argument("--profile", action="store_true", help="one more replay in-process, under cProfile")
    args = parser.parse_args()
    try:
        datasets = root("atp", args.datasets)
    except DatasetMissing as exc:
        raise SystemExit(str(exc)) from None
    with database(args.database_url) as url:
        loaded, imported = cli(url, *recipe(datasets))
        print(f"import --no-replay: {imported['matches']:,} matches in {loaded:.1f} s", flush=True)
        rows = []
        for run in range(args.runs):
            seconds, result = cli(url, "replay", "--mode", MODE)
            split = result["seconds"]
            assert isinstance(split, dict)
            rows.append(seconds)
            print(
                f"| {'first (after the import)' if run == 0 else f'again ({run + 1})'} | {seconds:.2f} "
                f"| {split['read']:.2f} | {split['rate']:.2f} | {split['write']:.2f} "
                f"| {'fresh tables' if result.get('fresh_tables') else 'in place'} |",
                flush=True,
            )
        print(f"median of {len(rows)}: {statistics.median(rows):.2f} s end to end (goal: <= 8 s)")
        print(
            f"PostgreSQL alone, copying matches and match_players into new tables with their indexes "
            f"(the least a replay's write does): {copy_alone(url):.2f} s"
        )
        if args.profile:
            print(profile(url))


if __name__ == "__main__":
    main()
