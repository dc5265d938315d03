"""Erasing a player with 10,000 matches, through the API, while other matches are posted.

    python bench/erasure.py [--matches 10000] [--background 100000] [--players 50000] [--writers 4]

1. Starts the service the way `make run` does (`python -m app serve`, embedded
   PostgreSQL and Redis under a temp DATA_DIR).
2. Seeds one mode in SQL: PLAYERS rated players, BACKGROUND 1v1 matches among them and
   MATCHES 1v1 matches of one player against them, each with its participants and a stored
   response shaped as POST /v1/matches stores it.
3. WRITERS clients post 1v1 matches of random other players in the same mode, back to back,
   before, during and after `DELETE /v1/players/{player_id}`.
4. Prints the DELETE's wall time, the longest post latency while it ran (how long the erasure
   held other writes back) and the posts' p50, then checks the player is gone.
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
import random
import statistics
import time

import httpx
import psycopg

from bench.serving import serving

MODE = "bench-erase"
TARGET = "erase-me"


def seed(url: str, players: int, background: int, matches: int) -> float:
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO modes (name) VALUES (%s) ON CONFLICT DO NOTHING", (MODE,))
        conn.execute(
            "INSERT INTO players (id) SELECT 'E' || g FROM generate_series(1, %s) g UNION ALL SELECT %s",
            (players, TARGET),
        )
        conn.execute(
            """
            INSERT INTO ratings (player_id, mode, mu, sigma, conservative, matches)
            SELECT id, %(mode)s, mu, sigma, mu - 3 * sigma, 10 FROM (
                SELECT id, 25 + 8 * (random() - 0.5) AS mu, 1 + 6 * random() AS sigma FROM players
            ) AS s
            """,
            {"mode": MODE},
        )
        # Pairs: the target against a random player for the first MATCHES, then random pairs.
        conn.execute(
            """
            CREATE TEMP TABLE pairs AS
            SELECT g AS n,
                   CASE WHEN g <= %(matches)s THEN %(target)s
                        ELSE 'E' || (1 + floor(random() * %(players)s / 2))::int END AS a,
                   'E' || (%(players)s / 2 + 1 + floor(random() * %(players)s / 2))::int AS b,
                   now() - make_interval(secs => %(total)s - g) AS at
            FROM generate_series(1, %(total)s) g
            """,
            {"matches": matches, "target": TARGET, "players": players, "total": matches + background},
        )
        conn.execute(
            """
            INSERT INTO matches (match_id, mode, played_at, body_hash, quality, response, applied_seq)
            SELECT 'bm' || n, %(mode)s, at, md5(n::text), 0.4,
                   jsonb_build_object(
                       'match_id', 'bm' || n, 'mode', CAST(%(mode)s AS varchar), 'played_at', at,
                       'created', true, 'quality', 0.4, 'void', false, 'players', jsonb_build_array(
                           jsonb_build_object('player_id', a, 'team', 0,
                               'before', jsonb_build_object('mu', 25.1, 'sigma', 8.1, 'conservative', 0.8),
                               'after', jsonb_build_object('mu', 26.1, 'sigma', 7.9, 'conservative', 2.4)),
                           jsonb_build_object('player_id', b, 'team', 1,
                               'before', jsonb_build_object('mu', 24.1, 'sigma', 8.2, 'conservative', -0.5),
                               'after', jsonb_build_object('mu', 23.1, 'sigma', 8.0, 'conservative', -0.9)))),
                   nextval('match_applied_seq')
            FROM pairs ORDER BY n
            """,
            {"mode": MODE},
        )
        conn.execute(
            """
            INSERT INTO match_players (match_pk, player_id, mode, team, rank, mu_before, sigma_before,
                                       mu_after, sigma_after)
            SELECT m.id, p.a, %(mode)s, 0, 1, 25.1, 8.1, 26.1, 7.9
            FROM pairs p JOIN matches m ON m.match_id = 'bm' || p.n
            UNION ALL
            SELECT m.id, p.b, %(mode)s, 1, 2, 24.1, 8.2, 23.1, 8.0
            FROM pairs p JOIN matches m ON m.match_id = 'bm' || p.n
            """,
            {"mode": MODE},
        )
        for table in ("players", "ratings", "matches", "match_players", "leaderboard_deltas"):
            conn.execute(f"VACUUM ANALYZE {table}")
    return time.perf_counter() - started


async def writer(
    http: httpx.AsyncClient, players: int, stop: asyncio.Event, log: list[tuple[float, float]]
) -> None:
    rng = random.Random()
    while not stop.is_set():
        a, b = rng.sample(range(1, players + 1), 2)
        body = {
            "match_id": f"bw-{rng.getrandbits(64):x}",
            "mode": MODE,
            "teams": [{"players": [{"id": f"E{a}"}], "rank": 1}, {"players": [{"id": f"E{b}"}], "rank": 2}],
        }
        started = time.perf_counter()
        response = await http.post("/v1/matches", json=body)
        if response.status_code != 201:
            raise SystemExit(f"POST /v1/matches: {response.status_code} {response.text}")
        log.append((started, time.perf_counter()))


async def run(base: str, key: str, players: int, writers: int) -> tuple[float, float, float, int]:
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
        stop, log = asyncio.Event(), []
        tasks = [asyncio.create_task(writer(http, players, stop, log)) for _ in range(writers)]
        await asyncio.sleep(2.0)
        started = time.perf_counter()
        response = await http.delete(f"/v1/players/{TARGET}")
        ended = time.perf_counter()
        if response.status_code != 204:
            raise SystemExit(f"DELETE: {response.status_code} {response.text}")
        await asyncio.sleep(1.0)
        stop.set()
        await asyncio.gather(*tasks)
        during = [end - start for start, end in log if end > started and start < ended]
        others = [end - start for start, end in log if end < started]
        return ended - started, max(during, default=0.0), statistics.median(others), len(during)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--background", type=int, default=100_000)
    parser.add_argument("--players", type=int, default=50_000)
    parser.add_argument("--writers", type=int, default=4)
    args = parser.parse_args()
    with serving("erasure") as served:
        seconds = seed(served.database_url, args.players, args.background, args.matches)
        print(
            f"seeded {args.players:,} players, {args.matches:,} matches of the player and "
            f"{args.background:,} others in {seconds:.1f} s"
        )
        took, longest, p50, posted = asyncio.run(run(served.base, served.key, args.players, args.writers))
        print(f"DELETE /v1/players/{{player_id}} ({args.matches:,} matches): {took * 1000:.0f} ms")
        print(
            f"posts of other players while it ran: {posted}, longest {longest * 1000:.0f} ms "
            f"(p50 before it: {p50 * 1000:.1f} ms)"
        )
        with psycopg.connect(served.database_url) as conn:
            left = conn.execute(
                "SELECT count(*) FROM match_players WHERE player_id = %s", (TARGET,)
            ).fetchone()
            renamed = conn.execute(
                "SELECT count(*) FROM match_players WHERE player_id LIKE 'erased:%%'"
            ).fetchone()
        assert left == (0,) and renamed == (args.matches,), (left, renamed)
        headers = {"Authorization": f"Bearer {served.key}"}
        if httpx.get(f"{served.base}/v1/players/{TARGET}", headers=headers).status_code != 404:
            raise SystemExit("the player is still there")
        print("checked: no row names the player; their matches name one pseudonym")


if __name__ == "__main__":
    main()
