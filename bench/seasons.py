"""A season switch on a big mode while match posts continue.

    python bench/seasons.py [--players 1000000] [--posters 8] [--reset soft]

1. Starts the service the way `make run` does (`python -m app serve`, embedded PostgreSQL
   and Redis under a temp DATA_DIR; DATABASE_URL / REDIS_URL given on the command line's
   environment with --use-env instead).
2. Seeds PLAYERS rated players in one mode (random mu, sigma and match counts).
3. Keeps POSTERS clients posting 1 v 1 matches between random seeded players, over
   keep-alive HTTP, timing every post.
4. After a few seconds, starts a season (`POST /v1/modes/{mode}/seasons`) and follows the
   job to its end, then posts a few seconds more.
5. Prints the job's time, how long it held the mode's posts (its `seconds.locked`), the
   PostgreSQL server's CPU time over the switch (local servers: /proc), the posts' longest
   wait and p99 around the switch, any failed post, and checks that every posted match
   landed in exactly one season (ended: applied_seq <= the boundary).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module: bench modules are
# imported as a package from the repository root.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import json
import os
import random
import time
from typing import Any

import httpx
import psycopg

from bench.serving import RawHttp, serving

MODE = "bench-season"


def seed(url: str, players: int) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO players (id) SELECT 'S' || g FROM generate_series(1, %s) g ON CONFLICT DO NOTHING",
            (players,),
        )
        conn.execute(
            """
            INSERT INTO ratings (player_id, mode, mu, sigma, conservative, matches, wins, losses)
            SELECT id, %(mode)s, mu, sigma, mu - 3 * sigma, matches, matches / 2, matches - matches / 2
            FROM (
                SELECT 'S' || g AS id, 25 + 8 * (random() + random() + random() - 1.5) AS mu,
                       0.8 + 7.5 * random() AS sigma, (random() * 200)::int AS matches
                FROM generate_series(1, %(players)s) g
            ) AS s
            """,
            {"mode": MODE, "players": players},
        )
        conn.execute("VACUUM ANALYZE ratings")
    return time.perf_counter() - started


def postmaster(url: str) -> int:
    """The PostgreSQL server's process id (the parent of this connection's backend)."""
    with psycopg.connect(url) as conn:  # read while the backend lives
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert backend is not None
        status = Path(f"/proc/{backend[0]}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


def cpu(parent: int) -> tuple[float, float]:
    """CPU seconds (user + system) of a process, and of it with its live children: the
    service's process; the PostgreSQL server's (the backends of the job and of the posts, and
    the background writers)."""
    alone, total = 0, 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, rest = stat.read_text().split(" ", 1)
        except OSError:
            continue
        fields = rest.rsplit(")", 1)[1].split()
        if int(pid) == parent or int(fields[1]) == parent:
            total += int(fields[11]) + int(fields[12])
            if int(pid) == parent:
                alone = int(fields[11]) + int(fields[12])
    return alone / os.sysconf("SC_CLK_TCK"), total / os.sysconf("SC_CLK_TCK")


def cpu_now(service: int, server: int) -> tuple[float, float]:
    """(the service's CPU seconds, the PostgreSQL server's)."""
    return cpu(service)[0], cpu(server)[1]


class Load:
    """Posting clients: every post's (start time, seconds, status)."""

    def __init__(self, base: str, key: str, players: int) -> None:
        self.base, self.key, self.players = base, key, players
        self.samples: list[tuple[float, float, int]] = []
        self.stop = asyncio.Event()
        self.ids: list[str] = []

    async def poster(self, worker: int) -> None:
        rng = random.Random(worker)
        async with RawHttp(self.base, self.key) as http:
            n = 0
            while not self.stop.is_set():
                a, b = rng.sample(range(1, self.players + 1), 2)
                match_id = f"bs-{worker}-{n}"
                n += 1
                body = {
                    "match_id": match_id,
                    "mode": MODE,
                    "teams": [
                        {"players": [{"id": f"S{a}"}], "rank": 0},
                        {"players": [{"id": f"S{b}"}], "rank": 1},
                    ],
                }
                started = time.perf_counter()
                status, _ = await http.request("POST", "/v1/matches", json.dumps(body).encode())
                self.samples.append((started, time.perf_counter() - started, status))
                self.ids.append(match_id)


async def run(base: str, key: str, url: str, service: int, args: argparse.Namespace) -> dict[str, Any]:
    load = Load(base, key, args.players)
    server = postmaster(url)
    posters = [asyncio.create_task(load.poster(w)) for w in range(args.posters)]
    await asyncio.sleep(args.before)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        asked, cpu_asked = time.perf_counter(), cpu_now(service, server)
        accepted = await http.post(f"/v1/modes/{MODE}/seasons", json={"name": "s1", "reset": args.reset})
        accepted.raise_for_status()
        while (job := (await http.get(accepted.headers["Location"])).json())["status"] not in (
            "done",
            "failed",
        ):
            await asyncio.sleep(0.2)
        finished, cpu_finished = time.perf_counter(), cpu_now(service, server)
    await asyncio.sleep(args.after)
    load.stop.set()
    await asyncio.gather(*posters)
    if job["status"] != "done":
        raise SystemExit(f"the season job failed: {job['error']}")
    during = [s for s in load.samples if asked <= s[0] <= finished]
    before = [s[1] for s in load.samples if s[0] < asked] or [0.0]
    waits = sorted(s[1] for s in during) or [0.0]
    failed = [s for s in load.samples if s[2] != 201]
    with psycopg.connect(url) as conn:
        boundary = job["result"]["boundary_seq"]
        counted = conn.execute(
            "SELECT count(*) FILTER (WHERE applied_seq <= %s), count(*) FILTER (WHERE applied_seq > %s),"
            " count(*) FILTER (WHERE applied_seq IS NULL) FROM matches WHERE mode = %s",
            (boundary, boundary, MODE),
        ).fetchone()
    assert counted is not None
    return {
        "players": args.players,
        "reset": args.reset,
        "job_total_s": job["result"]["seconds"]["total"],
        "job_locked_s": job["result"]["seconds"]["locked"],
        # The job's phases (read the final order, archive and reset in chunks, rank the
        # archive): where a re-run should look first.
        "job_phases_s": {k: v for k, v in job["result"]["seconds"].items() if k not in ("total", "locked")},
        "job_wall_s": round(finished - asked, 3),
        # CPU over the switch: the service's process (posts and the job share its event loop),
        # and PostgreSQL's, the job's backend with the posts' (a backend that exits meanwhile
        # is not counted; the service's pool keeps them).
        "service_cpu_during_switch_s": round(cpu_finished[0] - cpu_asked[0], 1),
        "postgres_cpu_during_switch_s": round(cpu_finished[1] - cpu_asked[1], 1),
        "posts": len(load.samples),
        "posts_failed": len(failed),
        "failed_statuses": sorted({s[2] for s in failed}),
        "posts_during_switch": len(during),
        "longest_post_wait_s": round(max(s[1] for s in load.samples), 3),
        "longest_post_wait_before_switch_s": round(max(before), 3),
        "p99_during_switch_s": round(waits[int(len(waits) * 0.99)], 3),
        "matches_in_ended_season": counted[0],
        "matches_in_new_season": counted[1],
        "matches_unnumbered": counted[2],
        "posted_and_stored": len(load.ids) - len(failed) == counted[0] + counted[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--posters", type=int, default=8)
    parser.add_argument("--reset", choices=["hard", "soft", "none"], default="soft")
    parser.add_argument("--before", type=float, default=3.0, help="seconds of posts before the switch")
    parser.add_argument("--after", type=float, default=3.0, help="seconds of posts after it")
    parser.add_argument(
        "--use-env", action="store_true", help="DATABASE_URL and REDIS_URL from the environment"
    )
    args = parser.parse_args()
    settings = {k: os.environ[k] for k in ("DATABASE_URL", "REDIS_URL")} if args.use_env else {}
    with serving("seasons", **settings) as served:
        url = settings.get("DATABASE_URL", served.database_url)
        with httpx.Client(base_url=served.base, headers={"Authorization": f"Bearer {served.key}"}) as http:
            http.put(f"/v1/modes/{MODE}", json={}).raise_for_status()
        seeded = seed(url, args.players)
        print(f"seeded {args.players} rated players in {seeded:.1f} s", file=sys.stderr)
        print(json.dumps(asyncio.run(run(served.base, served.key, url, served.pid, args)), indent=2))


if __name__ == "__main__":
    main()
