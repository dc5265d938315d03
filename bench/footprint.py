"""What one match, one player, one waiting ticket and one smoothed game cost, for docs/scaling.md.

    python bench/footprint.py [--players 100000] [--matches 200000] [--http-matches 2000]
                              [--tickets 20000] [--games 200000] [--read-seconds 5] [--skip-smooth]

Starts the service as `make run` does (`python -m app serve`, 2 uvicorn workers, embedded
PostgreSQL and Redis under a temp DATA_DIR), then measures:

1. PostgreSQL bytes per rated player and per stored match. A JSONL file of MATCHES 2v2
   matches over PLAYERS players (UUID match and player ids, one year of played_at) goes in
   through `python -m app import` (validation, COPY, then the replay that rates them and
   writes every stored response, as in production). Sizes are pg_total_relation_size (heap,
   TOAST and indexes) of each table over its rows: as written, and after VACUUM FULL.
2. WAL per match on the service's own write path: MATCHES_HTTP 2v2 `POST /v1/matches` over
   HTTP (16 keep-alive connections), with pg_current_wal_lsn() and pg_stat_wal read around
   them; four rounds: right after a CHECKPOINT (every touched page's first change logs a
   full-page image), straight after it (fewer pages not yet logged), with full_page_writes
   off (the records alone: the steady state once images amortise), and right after a
   CHECKPOINT with wal_compression on. The
   tables' growth over those matches is printed too, and the most client connections the
   service held meanwhile (pg_stat_activity).
3. Leaderboard reads/s under wrk (16 connections): the top-100 page, and a random player's
   rank with 5 neighbours.
4. Redis bytes per waiting ticket: TICKETS one-player tickets queued through
   `POST /v1/queues/{mode}/tickets/batch` (never matched), as the INFO used_memory delta and
   as the MEMORY USAGE sum of the mode's keys; once plain, once with three regions'
   latencies per ticket.
5. TrueSkill Through Time memory and time per game (`app.rating.history`), in a separate
   process: the same 2v2 history shape (GAMES games over PLAYERS players, 365 daily
   batches): init, seconds per plain sweep, `convergence()` to 1e-6 (at most 100 sweeps),
   and peak RSS over the RSS with the input built.
Prints one table per part.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module: import bench modules
# as a package from the repository root instead of from this folder.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import contextlib  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402
import psycopg  # noqa: E402
import redis  # noqa: E402

from app.config import Settings  # noqa: E402
from app.infra.embedded import running_redis  # noqa: E402
from bench.serving import RawHttp, Served, serving  # noqa: E402

MODE = "footprint"
TABLES = ("players", "ratings", "matches", "match_players", "leaderboard_deltas")
SMOOTH_CAP = 100


def ids(rng: random.Random, count: int) -> list[str]:
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


def two_v_two(rng: random.Random, players: list[str]) -> list[list[str]]:
    a, b, c, d = rng.sample(players, 4)
    return [[a, b], [c, d]]


def write_history(path: Path, players: list[str], matches: int, rng: random.Random) -> None:
    """MATCHES 2v2 matches in the body of POST /v1/matches, one year of played_at in order."""
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    step = 365 * 86400 / matches
    with path.open("w") as out:
        for number, (match_id, teams) in enumerate((m, two_v_two(rng, players)) for m in ids(rng, matches)):
            body = {
                "match_id": match_id,
                "played_at": (start + dt.timedelta(seconds=number * step)).isoformat(),
                "teams": [
                    {"players": [{"id": p} for p in team], "rank": rank} for rank, team in enumerate(teams)
                ],
            }
            out.write(json.dumps(body, separators=(",", ":")) + "\n")


def sizes(conn: psycopg.Connection[Any]) -> dict[str, tuple[int, int]]:
    """(rows, bytes incl. TOAST and indexes) per table."""
    out = {}
    for table in TABLES:
        rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
        size = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()[0]  # type: ignore[index]
        out[table] = (rows, size)
    return out


def per_row(report: dict[str, tuple[int, int]], tables: tuple[str, ...], over: str) -> float:
    return sum(report[t][1] for t in tables) / max(report[over][0], 1)


def print_sizes(label: str, report: dict[str, tuple[int, int]]) -> None:
    print(f"\n{label}\n")
    print("| table | rows | MB (heap + TOAST + indexes) | bytes per row |")
    print("|---|---|---|---|")
    for table, (rows, size) in report.items():
        print(f"| {table} | {rows:,} | {size / 1e6:.1f} | {size / max(rows, 1):.0f} |")
    player = per_row(report, ("players", "ratings"), "players")
    match = per_row(report, ("matches", "match_players", "leaderboard_deltas"), "matches")
    print(
        f"\nper rated player (players + ratings): **{player:.0f} B**; "
        f"per stored 2v2 match (matches + match_players + leaderboard_deltas): **{match:.0f} B**"
    )


def import_history(served: Served, path: Path) -> float:
    started = time.perf_counter()
    env = {**os.environ, "DATABASE_URL": served.database_url, "DATA_DIR": str(served.workdir / "data")}
    subprocess.run(
        [sys.executable, "-m", "app", "import", "--mode", MODE, str(path)],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


class ConnectionPeak(threading.Thread):
    """The most client connections to the service's database seen while running."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.peak, self.stopping = url, 0, threading.Event()

    def run(self) -> None:
        with contextlib.suppress(psycopg.Error), psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stopping.wait(0.2):
                count = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
                ).fetchone()[0]  # type: ignore[index]
                self.peak = max(self.peak, count)


async def post_matches(served: Served, players: list[str], count: int, rng: random.Random) -> float:
    bodies = [
        json.dumps(
            {
                "match_id": match_id,
                "mode": MODE,
                "teams": [
                    {"players": [{"id": p} for p in team], "rank": r}
                    for r, team in enumerate(two_v_two(rng, players))
                ],
            }
        ).encode()
        for match_id in ids(rng, count)
    ]
    started = time.perf_counter()

    async def connection(share: list[bytes]) -> None:
        async with RawHttp(served.base, served.key) as http:
            for body in share:
                status, content = await http.request("POST", "/v1/matches", body)
                if status not in (200, 201):
                    raise SystemExit(f"POST /v1/matches: {status} {content[:300]!r}")

    await asyncio.gather(*(connection(bodies[i::16]) for i in range(16)))
    return time.perf_counter() - started


def wal_round(
    served: Served,
    players: list[str],
    count: int,
    rng: random.Random,
    checkpoint: bool,
    setting: str | None = None,
) -> dict[str, float]:
    """WAL of COUNT matches posted over HTTP; `setting` (e.g. "full_page_writes = off") holds
    for this round only."""
    with psycopg.connect(served.database_url, autocommit=True) as conn:
        if setting:
            conn.execute(f"ALTER SYSTEM SET {setting}")
            conn.execute("SELECT pg_reload_conf()")
        if checkpoint:
            conn.execute("CHECKPOINT")
        before_sizes = sizes(conn)
        lsn = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
        stat = conn.execute("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
        peak = ConnectionPeak(served.database_url)
        peak.start()
        seconds = asyncio.run(post_matches(served, players, count, rng))
        peak.stopping.set()
        peak.join()
        wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,)).fetchone()[0]  # type: ignore[index]
        after = conn.execute("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
        after_sizes = sizes(conn)
        if setting:
            conn.execute(f"ALTER SYSTEM RESET {setting.split()[0]}")
            conn.execute("SELECT pg_reload_conf()")
    assert stat is not None and after is not None
    grown = sum(
        after_sizes[t][1] - before_sizes[t][1] for t in ("matches", "match_players", "leaderboard_deltas")
    )
    return {
        "matches": count,
        "rate": count / seconds,
        "wal_per_match": float(wal) / count,
        "records_per_match": (after[0] - stat[0]) / count,
        "fpi_per_match": (after[1] - stat[1]) / count,
        "growth_per_match": grown / count,
        "connections": peak.peak,
    }


def redis_client(served: Served) -> redis.Redis:
    found = running_redis(served.workdir / "data")
    if found is None:
        raise SystemExit("the embedded Redis is not running")
    return redis.Redis(unix_socket_path=found[1])


def ticket_round(
    served: Served, mode: str, count: int, rng: random.Random, latencies: bool
) -> dict[str, float]:
    store = redis_client(served)
    headers = {"Authorization": f"Bearer {served.key}"}
    with httpx.Client(base_url=served.base, headers=headers, timeout=120) as http:
        response = http.put(
            f"/v1/modes/{mode}", json={"quality_start": 0.0, "quality_floor": 0.0, "ticket_ttl_seconds": 3600}
        )
        response.raise_for_status()
        used = int(store.info("memory")["used_memory"])
        regions = ["eu-west", "eu-east", "us-east", "us-west", "asia"]
        players = ids(rng, count)
        queued = 0
        for start in range(0, count, 1000):
            tickets: list[dict[str, Any]] = [{"players": [p]} for p in players[start : start + 1000]]
            if latencies:
                for ticket in tickets:
                    ticket["latencies"] = {r: rng.randint(10, 150) for r in rng.sample(regions, 3)}
            response = http.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets})
            response.raise_for_status()
            queued += sum(t["status"] == "queued" for t in response.json()["tickets"])
    grown = int(store.info("memory")["used_memory"]) - used
    keys = list(store.scan_iter(match=f"mm:*{{{mode}}}*", count=1000))
    usage = sum(int(store.memory_usage(k, samples=0) or 0) for k in keys)
    return {
        "queued": queued,
        "used_memory": grown / queued,
        "memory_usage": usage / queued,
        "keys": len(keys),
    }


READS_LUA = r"""
local players = {%(players)s}
wrk.headers["Authorization"] = "Bearer %(key)s"
request = function()
  if %(rank)s then
    local player = players[math.random(1, #players)]
    return wrk.format("GET", "/v1/leaderboards/%(mode)s/players/" .. player .. "?around=5")
  end
  return wrk.format("GET", "/v1/leaderboards/%(mode)s?limit=100")
end
"""


def read_rate(served: Served, rank: bool, seconds: int) -> float:
    """Leaderboard reads/s under wrk (16 connections): the top-100 page, or a random rated
    player's rank."""
    with psycopg.connect(served.database_url) as conn:
        rated = conn.execute("SELECT player_id FROM ratings WHERE mode = %s LIMIT 1000", (MODE,)).fetchall()
    lua = served.workdir / "reads.lua"
    sample = ",".join(f'"{row[0]}"' for row in rated)
    lua.write_text(
        READS_LUA % {"players": sample, "key": served.key, "mode": MODE, "rank": str(rank).lower()}
    )
    out = subprocess.run(
        ["wrk", "-t2", "-c16", f"-d{seconds}s", "-s", str(lua), served.base],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    if "Non-2xx" in out:
        raise SystemExit(f"leaderboard reads failed:\n{out}")
    return float(out.split("Requests/sec:")[1].split()[0])


SMOOTH = """
import json, random, resource, sys, time, uuid
from app.rating.history import History

games, players, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
names = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(players)]
composition, times = [], []
for number in range(games):
    a, b, c, d = rng.sample(names, 4)
    composition.append([[a, b], [c, d]])
    times.append(float(number * 365 // games))

def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize()

built = rss()
started = time.perf_counter()
history = History(composition, times=times, gamma=0.01)
init = time.perf_counter() - started
started = time.perf_counter()
for _ in range(3):
    history.iteration()
sweep = (time.perf_counter() - started) / 3
started = time.perf_counter()
_, sweeps = history.convergence(1e-6, %(cap)d)
converged = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"games": games, "init": init, "sweep": sweep, "sweeps": sweeps, "converged": converged,
                  "distance": history.distance, "capped": history.capped, "input": built, "peak": peak}))
"""


def smooth_round(games: int, players: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", SMOOTH % {"cap": SMOOTH_CAP}, str(games), str(players), "7"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--matches", type=int, default=200_000)
    parser.add_argument("--http-matches", type=int, default=2_000)
    parser.add_argument("--tickets", type=int, default=20_000)
    parser.add_argument("--games", type=int, default=200_000)
    parser.add_argument("--read-seconds", type=int, default=5)
    parser.add_argument("--skip-smooth", action="store_true")
    args = parser.parse_args()
    rng = random.Random(0)
    players = ids(rng, args.players)
    settings = Settings()

    with serving("footprint", workers=2) as served:
        history = served.workdir / "history.jsonl"
        write_history(history, players, args.matches, rng)
        took = import_history(served, history)
        with psycopg.connect(served.database_url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            written = sizes(conn)
            max_connections = conn.execute("SHOW max_connections").fetchone()[0]  # type: ignore[index]
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        print(
            f"PostgreSQL {version}; {args.matches:,} 2v2 matches over {args.players:,} players imported "
            f"(python -m app import, with its replay) in {took:.1f} s"
        )
        print_sizes("As written (import + replay, then VACUUM ANALYZE)", written)

        cold = wal_round(served, players, args.http_matches, rng, checkpoint=True)
        warm = wal_round(served, players, args.http_matches, rng, checkpoint=False)
        # Full-page images are once per page per checkpoint: at a high rate they amortise
        # towards zero, leaving the records themselves (third round); wal_compression shrinks
        # the images that remain (fourth).
        floor = wal_round(served, players, args.http_matches, rng, True, "full_page_writes = off")
        compressed = wal_round(served, players, args.http_matches, rng, True, "wal_compression = on")
        print(
            f"\nWAL per 2v2 POST /v1/matches ({args.http_matches:,} matches a round, "
            "16 connections, 2 workers)\n"
        )
        print(
            "| round | matches/s | WAL bytes per match | WAL records per match | full-page images per match "
            "| table growth per match, B | peak client connections |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, r in (
            ("right after CHECKPOINT", cold),
            ("straight after", warm),
            ("full_page_writes = off (the records alone)", floor),
            ("right after CHECKPOINT, wal_compression = on", compressed),
        ):
            print(
                f"| {label} | {r['rate']:.0f} | {r['wal_per_match']:.0f} | {r['records_per_match']:.1f} "
                f"| {r['fpi_per_match']:.2f} | {r['growth_per_match']:.0f} | {r['connections']} |"
            )
        print(
            f"\nmax_connections {max_connections}; DB_POOL_SIZE {settings.db_pool_size} per worker process "
            f"(SQLAlchemy pool_size, plus as many overflow): at most {2 * settings.db_pool_size} per worker"
        )

        top = read_rate(served, rank=False, seconds=args.read_seconds)
        around = read_rate(served, rank=True, seconds=args.read_seconds)
        print(
            f"\nLeaderboard reads under wrk (16 connections, {args.read_seconds} s, 2 workers, "
            f"{args.players:,} players)\n"
        )
        print("| read | requests/s |")
        print("|---|---|")
        print(f"| GET top-100 page | {top:.0f} |")
        print(f"| GET a random player's rank, 5 neighbours | {around:.0f} |")

        plain = ticket_round(served, "footprint-q", args.tickets, rng, latencies=False)
        regions = ticket_round(served, "footprint-q3", args.tickets, rng, latencies=True)
        print(f"\nRedis bytes per waiting one-player ticket ({args.tickets:,} queued, never matched)\n")
        print(
            "| tickets | INFO used_memory delta per ticket "
            "| MEMORY USAGE of the mode's keys per ticket | keys |"
        )
        print("|---|---|---|---|")
        for label, r in (("plain", plain), ("three regions' latencies", regions)):
            print(f"| {label} | {r['used_memory']:.0f} | {r['memory_usage']:.0f} | {r['keys']:.0f} |")

        with psycopg.connect(served.database_url, autocommit=True) as conn:
            conn.execute("VACUUM FULL ANALYZE players, ratings, matches, match_players, leaderboard_deltas")
            print_sizes("Compacted (VACUUM FULL), after the HTTP rounds too", sizes(conn))

    if not args.skip_smooth:
        s = smooth_round(args.games, args.players)
        per_game = (s["peak"] - s["input"]) / s["games"]
        print(
            f"\nTrueSkill Through Time (app.rating.history), {s['games']:,} 2v2 games, "
            f"{args.players:,} players, "
            f"365 daily batches, gamma 0.01\n"
        )
        print(
            "| init s | s per plain sweep | µs per game per sweep | convergence() to 1e-6 | "
            "input RSS MB | peak RSS MB | bytes per game over the input |"
        )
        print("|---|---|---|---|---|---|---|")
        capped = " (capped)" if s["capped"] else ""
        print(
            f"| {s['init']:.1f} | {s['sweep']:.2f} | {s['sweep'] / s['games'] * 1e6:.1f} | "
            f"{s['sweeps']} sweeps{capped}, {s['converged']:.1f} s, distance {s['distance']:.1e} | "
            f"{s['input'] / 1e6:.0f} | {s['peak'] / 1e6:.0f} | {per_game:.0f} |"
        )
    print(
        f"\n(ru_maxrss of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)"
    )


if __name__ == "__main__":
    main()
