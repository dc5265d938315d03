"""How soon long work shows progress, and how long it goes without moving it.

    python bench/progress.py [--datasets DIR] [--limit 10000]

Runs the real commands on a fresh embedded database (a temp DATA_DIR), each under a
pseudo-terminal as an operator would watch it, and timestamps every redraw of its bar (or any
line it prints): time from the command's start to its first update, and the longest gap
between two updates. Then runs history jobs the way the service does (`app.jobs.service.run`
on a queued job) while another connection polls the job's row, as `GET /v1/jobs/{id}` reads
it, every 50 ms: the same two figures for the row's progress.

On the shipped data: football imported from JSONL (written from the shipped CSV), replayed,
smoothed, switched to a new season; `evaluate-history` on its first LIMIT games and
`fit-history` on chess. With `--datasets DIR` (or $DATASETS_DIR): ATP singles imported by the
recipe of docs/import.md, replayed and smoothed, as commands and as jobs; then one player
erased and the file imported again (it must exit 0).

Targets (issue 35): first update within 1 s, no gap over 1 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module, which psycopg imports.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import csv
import itertools
import json
import os
import pty
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
import uuid

import psycopg

PYTHON = sys.executable
ATP_RECIPE = [
    "--column", "played_at=date", "--column", "winner=winner_id", "--column", "loser=loser_id",
    "--skip", "score~W/O|Walkover", "--skip", "winner_id~^199999$", "--skip", "loser_id~^199999$",
]  # fmt: skip
_SEGMENT = re.compile(rb"[\r\n]+")


def watch(command: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    """Run `command` under a pseudo-terminal: (seconds to its first update, longest gap
    between updates, seconds in all, exit status). An update is a redraw (\\r) or a line."""
    primary, secondary = pty.openpty()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=secondary, env=env, cwd=ROOT)  # fmt: skip
    os.close(secondary)
    updates: list[float] = []
    continuing = False  # the last chunk ended inside a redraw, already counted at its start
    while True:
        ready, _, _ = select.select([primary], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            now = time.perf_counter()
            # An update counts when it starts to arrive (a bar redrawn in place ends with no
            # newline until the next redraw).
            for number, part in enumerate(_SEGMENT.split(chunk)):
                if part.strip() and not (number == 0 and continuing):
                    updates.append(now)
            continuing = not chunk.endswith((b"\r", b"\n"))
        elif process.poll() is not None:
            break
    status = process.wait()
    os.close(primary)
    ended = time.perf_counter()
    return (*_figures(started, updates, ended), status)


def _figures(started: float, updates: list[float], ended: float) -> tuple[float, float, float]:
    if not updates:
        return ended - started, ended - started, ended - started
    marks = [*updates, ended]
    gap = max(b - a for a, b in itertools.pairwise(marks))
    return updates[0] - started, gap, ended - started


def football_jsonl(folder: Path) -> Path:
    """The shipped football results as JSONL match bodies (ids without spaces)."""
    source = ROOT / "tests/data/datasets/football/international_results.csv"
    target = folder / "football.jsonl"
    with source.open(encoding="utf-8") as rows, target.open("w", encoding="utf-8") as out:
        for number, row in enumerate(csv.DictReader(rows)):
            home, away = (re.sub(r"[^A-Za-z0-9._:@-]", "-", row[k]) for k in ("home_team", "away_team"))
            goals = int(row["home_score"]), int(row["away_score"])
            ranks = (0, 0) if goals[0] == goals[1] else ((0, 1) if goals[0] > goals[1] else (1, 0))
            teams = [{"players": [{"id": p}], "rank": r} for p, r in zip((home, away), ranks, strict=True)]
            body = {"match_id": f"football-{number}", "played_at": f"{row['date']}T00:00:00Z", "teams": teams}
            out.write(json.dumps(body) + "\n")
    return target


def job(url: str, mode: str, kind: str, params: dict[str, object]) -> tuple[float, float, float, int]:
    """Queue a job and run it as the service does, polling its row every 50 ms."""
    from app.config import Settings
    from app.db.engine import build_engine, build_sessionmaker
    from app.jobs import service

    job_id = str(uuid.uuid4())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO jobs (id, mode, kind, status, params, started_at, heartbeat_at)"
            " VALUES (%s, %s, %s, 'running', %s, now(), now())",
            (job_id, mode, kind, json.dumps(params)),
        )
    updates: list[float] = []
    stop = threading.Event()

    def poll() -> None:
        last = None
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                row = conn.execute("SELECT progress, status FROM jobs WHERE id = %s", (job_id,)).fetchone()
                if row is not None and row != last:
                    updates.append(time.perf_counter())
                    last = row
                time.sleep(0.05)

    async def run() -> None:
        engine = build_engine(Settings(database_url=url), url)
        try:
            await service.run(build_sessionmaker(engine), job_id, mode, kind, params)
        finally:
            await engine.dispose()

    poller = threading.Thread(target=poll)
    poller.start()
    started = time.perf_counter()
    asyncio.run(run())
    ended = time.perf_counter()
    time.sleep(0.1)
    stop.set()
    poller.join()
    with psycopg.connect(url) as conn:
        status = conn.execute("SELECT status FROM jobs WHERE id = %s", (job_id,)).fetchone()
    # The first sample is the row as queued: updates are the changes after it.
    return (*_figures(started, updates[1:], ended), 0 if status == ("done",) else 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=Path, default=os.environ.get("DATASETS_DIR") or None)
    parser.add_argument("--limit", type=int, default=10000, help="evaluate-history: first N games")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-progress-"))
    env = {**os.environ, "DATA_DIR": str(folder / "data")}
    for name in ("DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    app = [PYTHON, "-m", "app"]
    rows: list[tuple[str, tuple[float, float, float, int]]] = []

    def command(name: str, argv: list[str]) -> None:
        rows.append((name, watch(app + argv, env)))
        first, gap, _, status = rows[-1][1]
        print(f"{name}: first {first:.2f} s, longest gap {gap:.2f} s, exit {status}", file=sys.stderr)

    command("migrate (servers start)", ["migrate"])
    command("import football (JSONL)", ["import", "--mode", "football", str(football_jsonl(folder))])
    command("replay football", ["replay", "--mode", "football"])
    command("smooth football", ["smooth", "--mode", "football"])
    command(f"evaluate-history football --limit {args.limit}",
            ["evaluate-history", "--source", "football", "--limit", str(args.limit)])  # fmt: skip
    command("fit-history chess", ["fit-history", "--source", "chess"])
    command("evaluate-tournaments chgk-ec", ["evaluate-tournaments", "--source", "chgk-ec"])
    atp = args.datasets / "atp" / "atp_singles_1968_2024.csv.gz" if args.datasets else None
    if atp is not None:
        command("import atp", ["import", "--mode", "atp", *ATP_RECIPE, str(atp)])
        command("replay atp", ["replay", "--mode", "atp"])
        command("smooth atp", ["smooth", "--mode", "atp"])
    # Jobs, on the database the commands left (the embedded server is stopped between
    # commands: start it once more for the jobs).
    from app.infra.embedded import EmbeddedServers

    servers = EmbeddedServers(folder / "data", owner=True, wait_s=30)
    try:
        url = servers.start_postgres()
        for mode in ["football"] + (["atp"] if atp is not None else []):
            rows.append((f"job replay {mode}", job(url, mode, "replay", {})))
            rows.append((f"job smooth {mode}", job(url, mode, "smooth", {})))
            rows.append((f"job season {mode}", job(url, mode, "season", {"name": "s2", "reset": "soft"})))
        if atp is not None:
            with psycopg.connect(url) as conn:
                (player,) = conn.execute(
                    "SELECT player_id FROM ratings WHERE mode = 'atp' ORDER BY matches DESC LIMIT 1"
                ).fetchone() or ("",)
    finally:
        servers.stop()
    if atp is not None:
        rows.append(("import atp again after an erasure", _reimport_after_erasure(env, folder, player, atp)))
    shutil.rmtree(folder, ignore_errors=True)
    print("\n| work | first update (s) | longest gap (s) | total (s) | exit |")
    print("|---|---|---|---|---|")
    for name, (first, gap, total, status) in rows:
        print(f"| {name} | {first:.2f} | {gap:.2f} | {total:.1f} | {status} |")


def _reimport_after_erasure(
    env: dict[str, str], folder: Path, player: str, atp: Path
) -> tuple[float, float, float, int]:
    """Erase `player` (as DELETE /v1/players/{id} does), then import the same file again."""
    from app.infra.embedded import EmbeddedServers

    servers = EmbeddedServers(folder / "data", owner=True, wait_s=30)
    try:
        url = servers.start_postgres()
        asyncio.run(_erase(url, player))
    finally:
        servers.stop()
    return watch([PYTHON, "-m", "app", "import", "--mode", "atp", *ATP_RECIPE, str(atp)], env)


async def _erase(url: str, player: str) -> None:
    from app.config import Settings
    from app.db.engine import build_engine, build_sessionmaker
    from app.erasure import repository
    from app.erasure.service import new_pseudonym

    engine = build_engine(Settings(database_url=url), url)
    try:
        async with build_sessionmaker(engine)() as session, session.begin():
            await repository.lock_every_mode(session)
            await repository.pseudonymise(session, player, new_pseudonym())
            await repository.remove(session, player)
    finally:
        await engine.dispose()


if __name__ == "__main__":
    main()
