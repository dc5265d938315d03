"""Leaderboard reads at a million players, through the API, beside the plain count.

    python bench/leaderboard.py [--players 1000000] [--reads 2000] [--datasets DIR | --no-history]
    python bench/leaderboard.py --no-history --only-under-writes   # issue 39's check, ~15 minutes
    python bench/leaderboard.py --no-history --only-under-writes --no-drift   # its first case alone
    python bench/leaderboard.py --no-history --retier   # posts' latency while a tier change re-tiers

1. Starts the service the way `make run` does (`python -m app serve`, embedded
   PostgreSQL and Redis under a temp DATA_DIR).
2. Seeds PLAYERS rated players in one mode (random mu, sigma and match counts).
3. Times, over keep-alive HTTP: the top-100 page, a random player's rank with 5
   neighbours, and a page deep in the board (keyset cursor).
4. Baseline, same database: the rank as a plain `count(*)` of the rows ahead in the
   leaderboard index, the query the per-bucket counts replace.
5. Checks that a rank read right after a match reflects it.
5b. Under writes (issue 39): a random player's rank (`GET /v1/leaderboards/{mode}/players/{id}`)
   while WRITERS clients (another process) post 1v1 matches between the seeded players, three
   times: without drift, with drift_per_day (every seeded player last played up to 200 days
   ago, so the stored `conservative` is drifted), and with drift and tiers.
   `--only-under-writes` runs only this after the seeding; `--no-drift`, only its first case.
5c. `--retier` (issue 39, instead of the rest): tiers set and re-tiered first, then WRITERS
   clients post 1v1 matches, BASELINE_S seconds measured as the baseline, then while a PUT
   changes the tiers and its re-tier job places every player again: the PUT's time, the job's,
   and every post's latency and status meanwhile.
6. History work on the same database, as ops run it: `python -m app import` of ATP
   singles (195k matches, the recipe of docs/import.md) with its replay, then `python -m app
   smooth` (TrueSkill Through Time, 10 iterations) of that mode. ATP singles are not shipped
   with the repository (docs/datasets.md): they are read from `--datasets DIR` or
   `$DATASETS_DIR`; `--no-history` skips this step.
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
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import threading
import time
from typing import Any

import httpx
import psycopg

from app.db.conservative import conservative_sql
from app.evaluation.datasets import ENVIRONMENT, DatasetMissing, root
from bench.serving import RawHttp, serving

MODE = "bench-lb"
WRITERS = 8
# Seconds of posts measured before the tier change of --retier, the baseline of its latencies.
BASELINE_S = 20.0
DRIFT = 0.04
TIERS = [
    {"name": n, "min": m} for n, m in (("bronze", -100.0), ("silver", 0.0), ("gold", 10.0), ("diamond", 20.0))
]


def seed(url: str, players: int) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO players (id) SELECT 'L' || g FROM generate_series(1, %s) g ON CONFLICT DO NOTHING",
            (players,),
        )
        # One statement: the trigger counts the million rows in one grouped insert.
        conn.execute(
            f"""
            INSERT INTO ratings (player_id, mode, mu, sigma, conservative, matches, last_played_at)
            SELECT s.id, m.name, s.mu, s.sigma, {conservative_sql("s.mu", "s.sigma")}, s.matches, s.last
            FROM (
                SELECT 'L' || g AS id, 25 + 8 * (random() + random() + random() - 1.5) AS mu,
                       0.8 + 7.5 * random() AS sigma, (random() * 200)::int AS matches,
                       now() - random() * interval '200 days' AS last
                FROM generate_series(1, %(players)s) g
            ) AS s, modes m WHERE m.name = %(mode)s
            """,
            {"mode": MODE, "players": players},
        )
        conn.execute("VACUUM ANALYZE ratings")
        conn.execute("VACUUM ANALYZE leaderboard_deltas")
    return time.perf_counter() - started


def timed(http: httpx.Client, paths: list[str]) -> list[float]:
    out = []
    for path in paths:
        started = time.perf_counter()
        response = http.get(path)
        out.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"GET {path}: {response.status_code} {response.text}")
    return out


def one_v_one(own: random.Random, players: int, client: str) -> dict[str, Any]:
    """A 1v1 match between two random seeded players, its id unique to `client`."""
    a, b = own.sample(range(1, players + 1), 2)
    return {
        "match_id": f"{client}-{own.randrange(16**12):012x}",
        "mode": MODE,
        "teams": [{"players": [{"id": f"L{a}"}], "rank": 1}, {"players": [{"id": f"L{b}"}], "rank": 2}],
    }


async def _post_forever(base: str, key: str, players: int, number: int, posted: Any) -> None:
    """One posting client: 1v1 matches between random seeded players, one after another."""
    own = random.Random(number)
    async with RawHttp(base, key) as http:
        while True:
            match = one_v_one(own, players, f"w{number}")
            status, body = await http.request("POST", "/v1/matches", json.dumps(match).encode())
            if status >= 300:
                raise SystemExit(f"POST /v1/matches: {status} {body[:200]!r}")
            with posted.get_lock():
                posted.value += 1


def _posters(base: str, key: str, players: int, posted: Any) -> None:
    """The WRITERS posting clients, in a process of their own (run until terminated)."""

    async def run() -> None:
        await asyncio.gather(*(_post_forever(base, key, players, n, posted) for n in range(WRITERS)))

    asyncio.run(run())


def under_writes(
    base: str, key: str, headers: dict[str, str], players: int, reads: int, rng: random.Random
) -> tuple[list[float], float]:
    """A random player's rank, read `reads` times while WRITERS clients post 1v1 matches
    between random seeded players: the read latencies (ms) and the matches posted a second.

    The posters run in another process over plain sockets (RawHttp): in the reader's process
    their threads would hold the reader behind the GIL, and httpx would spend the cores the
    service needs."""
    context = multiprocessing.get_context("spawn")
    posted = context.Value("q", 0)
    posters = context.Process(target=_posters, args=(base, key, players, posted), daemon=True)
    posters.start()
    time.sleep(3.0)  # the posters under way
    if not posters.is_alive():
        raise SystemExit("the posting clients failed")
    started, before = time.perf_counter(), posted.value
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        ids = [f"L{rng.randint(1, players)}" for _ in range(reads)]
        samples = timed(http, [f"/v1/leaderboards/{MODE}/players/{p}?around=5" for p in ids])
    rate = (posted.value - before) / (time.perf_counter() - started)
    posters.terminate()
    posters.join()
    return samples, rate


def job_done(http: httpx.Client, job_id: str) -> dict[str, object]:
    while True:
        job: dict[str, object] = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.2)


def posts_during_retier(base: str, headers: dict[str, str], players: int) -> None:
    """Post 1v1 matches from WRITERS clients while a PUT of new tiers re-tiers the mode; print
    the PUT's and the job's times and the posts' latencies (ms) and failures meanwhile."""
    with httpx.Client(base_url=base, headers=headers, timeout=600) as http:
        first = http.put(f"/v1/modes/{MODE}", json={"tiers": TIERS}).json()["retier_job"]
        started = time.perf_counter()
        job_done(http, first)
        print(f"first re-tier (no posts): {time.perf_counter() - started:.1f} s")
    stop = threading.Event()
    during = threading.Event()
    measuring = threading.Event()
    # Per client: the posts' latencies (ms) before the change (the baseline) and during its job.
    baseline: list[list[float]] = [[] for _ in range(WRITERS)]
    latencies: list[list[float]] = [[] for _ in range(WRITERS)]
    failures = [0] * WRITERS

    def write(number: int) -> None:
        own = random.Random(100 + number)
        with httpx.Client(base_url=base, headers=headers, timeout=60) as http:
            while not stop.is_set():
                match = one_v_one(own, players, f"t{number}")
                sent = time.perf_counter()
                status = http.post("/v1/matches", json=match).status_code
                took = (time.perf_counter() - sent) * 1000
                if during.is_set():
                    latencies[number].append(took)
                    failures[number] += status >= 300
                elif measuring.is_set():
                    baseline[number].append(took)

    threads = [threading.Thread(target=write, args=(n,), daemon=True) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    time.sleep(2.0)  # the writers under way
    measuring.set()
    time.sleep(BASELINE_S)
    moved = [{"name": t["name"], "min": float(t["min"]) + 2.5} for t in TIERS]
    with httpx.Client(base_url=base, headers=headers, timeout=600) as http:
        during.set()
        sent = time.perf_counter()
        answer = http.put(f"/v1/modes/{MODE}", json={"tiers": moved, "demotion_margin": 1.0})
        put_ms = (time.perf_counter() - sent) * 1000
        answer.raise_for_status()
        job = job_done(http, answer.json()["retier_job"])
        job_s = time.perf_counter() - sent
        during.clear()
    stop.set()
    for thread in threads:
        thread.join()
    before = sorted(x for own in baseline for x in own)
    samples = sorted(x for own in latencies for x in own)
    print(f"| PUT new tiers | {put_ms:.0f} ms |")
    if before:
        print(
            f"| posts before the change ({WRITERS} clients, {BASELINE_S:.0f} s): {len(before):,} | "
            f"p50 {statistics.median(before):.1f} ms, p99 {before[int(len(before) * 0.99)]:.1f} ms |"
        )
    print(f"| its re-tier job ({job['status']}, {job['result']}) | {job_s:.1f} s |")
    if samples:
        p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99)]
        print(
            f"| posts meanwhile ({WRITERS} clients): {len(samples):,}, failed {sum(failures)} | "
            f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {samples[-1]:.0f} ms |"
        )


def plain_count_ms(url: str, ids: list[str]) -> list[float]:
    """The rank as a count over the leaderboard index: what a rank costs without buckets."""
    out = []
    with psycopg.connect(url) as conn:
        for player in ids:
            started = time.perf_counter()
            conn.execute(
                """
                SELECT count(*) FROM ratings r, (SELECT conservative AS c FROM ratings
                                                 WHERE mode = %(m)s AND player_id = %(p)s) me
                WHERE r.mode = %(m)s AND r.conservative >= me.c
                  AND (r.conservative > me.c OR r.player_id < %(p)s)
                """,
                {"m": MODE, "p": player},
            ).fetchone()
            out.append((time.perf_counter() - started) * 1000)
    return out


def history_work(url: str, datasets: Path) -> dict[str, float]:
    """Import + replay of ATP singles, then smooth, through the CLI; wall seconds of each."""
    env = {**os.environ, "DATABASE_URL": url, "LOG_LEVEL": "WARNING"}
    recipe = [
        "import", "--mode", "atp", "--column", "played_at=date", "--column", "winner=winner_id",
        "--column", "loser=loser_id", "--skip", "score~W/O|Walkover", "--skip", "winner_id~^199999$",
        "--skip", "loser_id~^199999$", str(datasets / "atp" / "atp_singles_1968_2024.csv.gz"),
    ]  # fmt: skip
    out: dict[str, float] = {}
    for name, args in (("import", recipe), ("smooth", ["smooth", "--mode", "atp", "--iterations", "10"])):
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "app", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        out[name] = time.perf_counter() - started
        report = json.loads(done.stdout)
        if name == "import":
            out["matches"] = report["matches"]
            out["load"] = report["seconds"]["read_and_load"]
            out["replay"] = report["seconds"]["replay"]
    return out


def summary(label: str, samples: list[float], goal: str) -> str:
    ordered = sorted(samples)
    p99 = ordered[int(len(ordered) * 0.99)]
    return f"| {label} | {statistics.median(ordered):.2f} | {p99:.2f} | {goal} |"


def print_under_writes(loaded: list[tuple[str, list[float], float]]) -> None:
    heading = f"a random player's rank, 5 neighbours, {WRITERS} clients posting"
    print(f"| {heading} | p50 ms | p99 ms | goal | matches/s |")
    print("|---|---|---|---|---|")
    for label, samples, rate in loaded:
        print(f"{summary(label, samples, 'p99 <= 10 ms')} {rate:,.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--players", type=int, default=1_000_000)
    parser.add_argument("--reads", type=int, default=2000)
    parser.add_argument("--no-history", action="store_true", help="skip the ATP import, replay and smooth")
    parser.add_argument("--datasets", type=Path, metavar="DIR", help=f"holds atp/ (default: ${ENVIRONMENT})")
    parser.add_argument(
        "--only-under-writes",
        action="store_true",
        help="after seeding, only the reads under writes (issue 39)",
    )
    parser.add_argument(
        "--no-drift",
        action="store_true",
        help="reads under writes without drift only (the drift and tier cases re-score and re-tier "
        "the million rows first, minutes each)",
    )
    parser.add_argument(
        "--retier",
        action="store_true",
        help="after seeding, only posts' latency while a tier change re-tiers the mode (issue 39)",
    )
    args = parser.parse_args()
    datasets = None
    if not args.no_history:
        try:
            datasets = root("atp", args.datasets)
        except DatasetMissing as exc:
            print(f"{exc}; or pass --no-history", file=sys.stderr)
            raise SystemExit(2) from None
    rng = random.Random(1)
    with serving("leaderboard") as served:
        url = served.database_url
        headers = {"Authorization": f"Bearer {served.key}"}
        with httpx.Client(base_url=served.base, headers=headers, timeout=30) as http:
            http.put(f"/v1/modes/{MODE}", json={}).raise_for_status()
            seconds = seed(url, args.players)
            if args.retier:
                print(f"{args.players:,} rated players, seeded in {seconds:.1f} s (1 worker)\n")
                posts_during_retier(served.base, headers, args.players)
                return
            loaded = []
            cases = (
                ("no drift", {}),
                (f"drift_per_day {DRIFT}", {"drift_per_day": DRIFT}),
                (f"drift_per_day {DRIFT} and {len(TIERS)} tiers", {"tiers": TIERS}),
            )
            for label, settings in cases[: 1 if args.no_drift else len(cases)]:
                if settings:
                    changed = http.put(f"/v1/modes/{MODE}", json=settings, timeout=600)
                    changed.raise_for_status()
                    if changed.json().get("retier_job"):
                        # Tiers are placed by a job (issue 39): measured once it is done.
                        job_done(http, changed.json()["retier_job"])
                    with psycopg.connect(url, autocommit=True) as conn:
                        conn.execute("VACUUM ANALYZE ratings")
                samples, rate = under_writes(served.base, served.key, headers, args.players, args.reads, rng)
                loaded.append((label, samples, rate))
            if args.only_under_writes:
                print(f"{args.players:,} rated players; {WRITERS} clients posting 1v1 matches (1 worker)\n")
                print_under_writes(loaded)
                return
            plain = http.put(f"/v1/modes/{MODE}", json={"drift_per_day": 0, "tiers": []}, timeout=600)
            plain.raise_for_status()
            if plain.json().get("retier_job"):
                # The drift's removal is re-scored by the job (issue 39): timed once it is done.
                job_done(http, plain.json()["retier_job"])
            ids = [f"L{rng.randint(1, args.players)}" for _ in range(args.reads)]
            timed(http, [f"/v1/leaderboards/{MODE}?limit=100"] * 50)  # warm-up
            top = timed(http, [f"/v1/leaderboards/{MODE}?limit=100"] * args.reads)
            ranks = timed(http, [f"/v1/leaderboards/{MODE}/players/{p}?around=5" for p in ids])
            middle = http.get(f"/v1/leaderboards/{MODE}/players/L{args.players // 2}?around=0").json()
            cursor = http.get(f"/v1/leaderboards/{MODE}?limit=100").json()["next_cursor"]
            deep = timed(http, [f"/v1/leaderboards/{MODE}?limit=100&cursor={cursor}"] * args.reads)
            plain = plain_count_ms(url, ids[: max(50, args.reads // 10)])

            # A rank read right after a match reflects it.
            loser, winner = sorted(
                ids[:2], key=lambda p: http.get(f"/v1/leaderboards/{MODE}/players/{p}").json()["rank"]
            )
            before = http.get(f"/v1/leaderboards/{MODE}/players/{winner}").json()["rank"]
            match = {
                "match_id": "bench-lb-upset",
                "mode": MODE,
                "teams": [{"players": [{"id": winner}], "rank": 1}, {"players": [{"id": loser}], "rank": 2}],
            }
            http.post("/v1/matches", json=match).raise_for_status()
            after = http.get(f"/v1/leaderboards/{MODE}/players/{winner}").json()["rank"]
        history = None if datasets is None else history_work(url, datasets)

    print(f"{args.players:,} rated players in one mode, embedded PostgreSQL, seeded in {seconds:.1f} s; ")
    print(f"{args.reads} sequential keep-alive requests each (1 uvicorn worker)\n")
    print("| read | p50 ms | p99 ms | goal |")
    print("|---|---|---|---|")
    print(summary("GET top-100 page", top, "p50 <= 10 ms"))
    print(summary("GET a random player's rank, 5 neighbours", ranks, "p50 <= 10 ms"))
    print(summary("GET the second page of 100 (keyset cursor)", deep, "-"))
    print(summary("baseline: rank as count(*) over the index (SQL only)", plain, "-"))
    print()
    print_under_writes(loaded)
    print(f"\nmiddle player's rank {middle['rank']:,} of {middle['total']:,}")
    seen = "reflected" if after < before else "NOT reflected"
    print(f"rank right after an upset win: {before:,} -> {after:,} ({seen})")
    if history is not None:
        rate = history["matches"] / history["load"]
        print("\n| history work (CLI, same database) | seconds | goal |")
        print("|---|---|---|")
        print(
            f"| import ATP singles ({history['matches']:,.0f} matches): read + COPY | {history['load']:.1f} "
            f"({rate:,.0f} matches/s) | >= 20,000 matches/s |"
        )
        print(f"| replay of the imported mode | {history['replay']:.1f} | - |")
        print(f"| import + replay, end to end (whole command) | {history['import']:.1f} | <= 60 s |")
        smooth = history["smooth"]
        print(f"| smooth (TrueSkill Through Time, 10 iterations, whole command) | {smooth:.1f} | <= 30 s |")


if __name__ == "__main__":
    main()
