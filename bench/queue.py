"""Matchmaking queue speed through the HTTP API, in one run.

    python bench/queue.py [--pool 10000] [--producers 4] [--workers 3]

Starts the service as `make run` does (embedded PostgreSQL and Redis) with WORKERS uvicorn
worker processes (three on two cores: a process's share of the few benchmark connections is
uneven, and a third process keeps both cores busy), then measures:
1. `matchmake` over a 1v1 pool of POOL tickets, 100 matches per call (p50 ms per call; the
   pool is topped up between calls, untimed);
2. sustained enqueue + matchmake: tickets matched per second while tickets keep arriving,
   PRODUCERS producers each posting batches of 100 tickets, one after another, and one
   matchmaking loop (a director) asking for up to 10,000 matches per call (the API's most:
   a call takes whatever the pool holds) and, when a call found fewer than 100 (the pool
   nearly drained), waiting 50 ms before the next (one loop per queue: concurrent callers
   are safe but redo each other's work). Producers spread their requests over four
   connections each. The load generator shares this machine's cores with the service, so it
   speaks HTTP/1.1 over plain keep-alive sockets (RawHttp) rather than httpx, which costs
   several times more CPU per request than the service's own parsing;
3. 5v5 from a pool of POOL players, 20 matches per call (p50 ms per call);
4. for reference, tickets queued per second one request per ticket (32 at a time);
5. as 1, with the latency rule: every ticket lists three regions (of five, 10 to 150 ms)
   and the mode allows 80 ms, relaxing to 150 ms over 60 s (`--only latency` runs this
   case alone);
6. as 3, under roles: a composition of 1 tank, 1 healer and 3 damage per team, where 15% of
   players can heal and 20% can tank (everyone deals damage); 20 matches per call, then one
   call that takes every match the pool holds (`--only roles`);
7. a 100-player free-for-all (100 teams of one) from a pool of POOL tickets, 10 matches per
   call, the pool topped up between calls (`--only ffa`).

8. backfill (`--only backfill`): 5v5 with BACKFILLS (500) open backfills, each missing 1 to 4
   players, and a pool of POOL solo tickets; 20 new matches per call after the fills (p50 ms per
   call; between calls, untimed, every filled backfill is replaced by a fresh one and the pool
   topped up). The fills count against max_matches, so a call asks for BACKFILLS + 20: room for
   a fill of every backfill and 20 new matches (more new matches when fewer backfills fill).

Cases 6 and 7 run beside case 3 (5v5 without roles) in the same run, as their baseline.

Two cases of the queue's statistics run alone:
- `--only stats`: GET /v1/queues/{mode}/stats with STATS_POOL (100,000) tickets queued and a
  matchmaking call made (p50 and p99 ms per read, one read at a time);
- `--only estimates`: the wait estimates' accuracy. Players of a 1v1 mode (ratings seeded, mu
  normal around 25 with deviation 8, sigma 1 to 3; quality from 0.9 relaxing to 0.3 over 30 s)
  queue at a steady rate (10 a second) against a matchmaking loop (a call every 0.5 s); each ticket's
  `estimated_wait_s` is read as it is queued (a GET right after its POST; each arrival its own
  task, so the rate holds whatever a request takes) and compared with its actual wait (from
  before its POST to the matchmaking answer that names it). After a 30 s warm-up (its tickets
  left out), 30 s at the rate and 30 s at twice the rate, in one run: the median of
  |estimate - actual| / actual per phase (goal: at most 30%). `--dump` writes every matched
  ticket's rating, times and estimate.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# This file is named queue.py (the name for it): keep it from shadowing the
# standard library's queue module, which asyncio's executor imports; bench modules are
# imported as a package from the repository root.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import time
from typing import Any

import httpx

from bench.serving import RawHttp, serving

REGIONS = ["eu-west", "eu-east", "us-east", "us-west", "asia"]


async def fill(
    http: httpx.AsyncClient,
    mode: str,
    players: list[str],
    batch: int = 100,
    rng: random.Random | None = None,
) -> int:
    """Queue one ticket per player, `batch` tickets per request; the number queued. With an
    rng, each ticket lists three regions' latencies."""
    queued = 0
    for start in range(0, len(players), batch):
        tickets: list[dict[str, Any]] = [{"players": [p]} for p in players[start : start + batch]]
        if rng is not None:
            for ticket in tickets:
                ticket["latencies"] = {r: round(rng.uniform(10, 150)) for r in rng.sample(REGIONS, 3)}
        response = await http.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets})
        response.raise_for_status()
        queued += sum(t["status"] == "queued" for t in response.json()["tickets"])
    return queued


async def single_ticket_rate(http: httpx.AsyncClient, mode: str, seconds: float) -> float:
    """Tickets queued per second with one POST /tickets per ticket, 32 requests at a time."""
    done = 0
    stop = time.perf_counter() + seconds

    async def client(number: int) -> None:
        nonlocal done
        counter = 0
        while time.perf_counter() < stop:
            body = {"players": [f"one-{number}-{counter}"]}
            response = await http.post(f"/v1/queues/{mode}/tickets", json=body)
            response.raise_for_status()
            counter += 1
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(32)))
    return done / (time.perf_counter() - started)


async def seed_ratings(http: httpx.AsyncClient, mode: str, players: list[str], rng: random.Random) -> None:
    semaphore = asyncio.Semaphore(64)

    async def one(player: str) -> None:
        async with semaphore:
            await http.put(
                f"/v1/players/{player}/ratings/{mode}",
                json={"mu": rng.uniform(5, 45), "sigma": rng.uniform(1, 8)},
            )

    await asyncio.gather(*(one(p) for p in players))


async def post_json(http: RawHttp, path: str, body: bytes) -> Any:
    """POST the body; the response's JSON. Anything but 200 ends the benchmark."""
    status, content = await http.request("POST", path, body)
    if status != 200:
        raise SystemExit(f"POST {path}: {status} {content[:300]!r}")
    return json.loads(content)


async def timed_matchmake(http: httpx.AsyncClient, mode: str, max_matches: int) -> tuple[float, int]:
    started = time.perf_counter()
    response = await http.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": max_matches})
    response.raise_for_status()
    return (time.perf_counter() - started) * 1000, len(response.json()["matches"])


async def sustained(base: str, key: str, producers: int, seconds: float) -> tuple[float, float]:
    """(tickets matched per second, tickets queued per second) in the queue bench-sustained."""
    matched = 0
    queued = 0
    stop = time.perf_counter() + seconds
    tickets_url = "/v1/queues/bench-sustained/tickets/batch"

    async def producer(offset: int) -> None:
        nonlocal queued
        # Requests go round four connections: the kernel hands each connection to one worker
        # process (by a hash of its ports), and a few connections can land unevenly.
        async with contextlib.AsyncExitStack() as stack:
            connections = [await stack.enter_async_context(RawHttp(base, key)) for _ in range(4)]
            counter = 0
            while time.perf_counter() < stop:
                players = ",".join(f'{{"players":["s{offset}-{counter + i}"]}}' for i in range(100))
                http = connections[counter // 100 % len(connections)]
                counter += 100
                outcomes = (await post_json(http, tickets_url, f'{{"tickets":[{players}]}}'.encode()))[
                    "tickets"
                ]
                queued += sum(outcome["status"] == "queued" for outcome in outcomes)

    async def director() -> None:
        nonlocal matched
        async with RawHttp(base, key) as http:
            while time.perf_counter() < stop:
                made = await post_json(http, "/v1/queues/bench-sustained/matchmake", b'{"max_matches":10000}')
                matched += 2 * len(made["matches"])
                if len(made["matches"]) < 100:  # the pool is nearly drained: wait a tick
                    await asyncio.sleep(0.05)

    started = time.perf_counter()
    await asyncio.gather(*(producer(number) for number in range(producers)), director())
    elapsed = time.perf_counter() - started
    return matched / elapsed, queued / elapsed


async def latency_case(http: httpx.AsyncClient, pool: int, rng: random.Random) -> list[float]:
    """Case 5: ms per matchmake call over a 1v1 pool with three regions per ticket."""
    relaxed = {"quality_start": 0.0, "quality_floor": 0.0, "ticket_ttl_seconds": 3600}
    mode = "bench-1v1-latency"
    await http.put(f"/v1/modes/{mode}", json={**relaxed, "max_latency_ms": 80, "max_latency_relaxed_ms": 150})
    players = [f"l{i}" for i in range(pool)]
    await seed_ratings(http, mode, players, rng)
    await fill(http, mode, players, rng=rng)
    timings = []
    next_id = pool
    for _ in range(15):
        elapsed, made = await timed_matchmake(http, mode, 100)
        timings.append(elapsed)
        refill = [f"l{i}" for i in range(next_id, next_id + 2 * made)]
        next_id += len(refill)
        await fill(http, mode, refill, rng=rng)
    return timings


BACKFILLS = 500


async def open_backfill(http: httpx.AsyncClient, mode: str, name: str, rng: random.Random) -> str:
    """A 5v5 game missing 1 to 4 players (spread over its teams at random); its id."""
    missing = rng.randint(1, 4)
    seats = [5, 5]
    for _ in range(missing):
        seats[rng.randrange(2)] -= 1
    teams = [[f"{name}-{t}-{i}" for i in range(seats[t])] for t in range(2)]
    response = await http.post(f"/v1/queues/{mode}/backfills", json={"teams": teams})
    response.raise_for_status()
    backfill_id: str = response.json()["backfill_id"]
    return backfill_id


async def backfill_case(http: httpx.AsyncClient, pool: int, rng: random.Random) -> tuple[list[float], int]:
    """Case 8: ms per matchmake call with BACKFILLS open backfills beside a pool of solos; and
    the fills made in all."""
    mode = "bench-5v5-backfill"
    await http.put(
        f"/v1/modes/{mode}",
        json={"team_size": 5, "ticket_ttl_seconds": 3600, "quality_start": 0.0, "quality_floor": 0.0},
    )
    players = [f"f{i}" for i in range(pool)]
    await seed_ratings(http, mode, players, rng)
    await fill(http, mode, players)
    games = 0
    for _ in range(BACKFILLS):
        await open_backfill(http, mode, f"g{games}", rng)
        games += 1
    timings, fills, next_id = [], 0, pool
    for _ in range(10):
        started = time.perf_counter()
        response = await http.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": BACKFILLS + 20})
        response.raise_for_status()
        timings.append((time.perf_counter() - started) * 1000)
        made = response.json()["matches"]
        filled = {m["backfill_id"] for m in made if m["kind"] == "backfill"}
        fills += len(filled)
        for backfill_id in filled:
            (await http.delete(f"/v1/queues/{mode}/backfills/{backfill_id}")).raise_for_status()
            await open_backfill(http, mode, f"g{games}", rng)
            games += 1
        taken = sum(len(m["ticket_ids"]) for m in made)
        refill = [f"f{i}" for i in range(next_id, next_id + taken)]
        next_id += len(refill)
        await fill(http, mode, refill)
    return timings, fills


async def fill_roles(http: httpx.AsyncClient, mode: str, players: list[str], rng: random.Random) -> None:
    """One ticket per player, 15% able to heal and 20% to tank; everyone deals damage."""
    for start in range(0, len(players), 100):
        tickets = []
        for player in players[start : start + 100]:
            roles = [r for r, p in (("tank", 0.2), ("healer", 0.15)) if rng.random() < p] + ["damage"]
            tickets.append({"players": [player], "roles": {player: roles}})
        response = await http.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets})
        response.raise_for_status()


async def composed_cases(http: httpx.AsyncClient, pool: int, rng: random.Random) -> dict[str, Any]:
    """Cases 3, 6 and 7 in one run: 5v5 without and with roles, and a 100-player free-for-all."""
    relaxed = {"quality_start": 0.0, "quality_floor": 0.0, "ticket_ttl_seconds": 3600}
    await http.put("/v1/modes/bench-5v5", json={**relaxed, "team_size": 5})
    await http.put(
        "/v1/modes/bench-5v5-roles",
        json={**relaxed, "team_size": 5, "roles": {"tank": 1, "healer": 1, "damage": 3}},
    )
    await http.put("/v1/modes/bench-ffa", json={**relaxed, "teams": 100, "team_size": 1})
    players = [f"p{i}" for i in range(pool)]
    for mode in ("bench-5v5", "bench-5v5-roles", "bench-ffa"):
        await seed_ratings(http, mode, players, rng)
    await fill(http, "bench-5v5", players)
    await fill_roles(http, "bench-5v5-roles", players, rng)
    await fill(http, "bench-ffa", players)
    # The three cases take turns, call by call, so a machine busy with other work weighs on
    # each alike.
    five, roles, ffa = [], [], []
    next_id = pool
    for _ in range(10):
        five.append((await timed_matchmake(http, "bench-5v5", 20))[0])
        roles.append((await timed_matchmake(http, "bench-5v5-roles", 20))[0])
        elapsed, made = await timed_matchmake(http, "bench-ffa", 10)
        ffa.append(elapsed)
        refill = [f"p{i}" for i in range(next_id, next_id + 100 * made)]
        next_id += len(refill)
        await fill(http, "bench-ffa", refill)
    drained, drained_count = await timed_matchmake(http, "bench-5v5-roles", 10_000)
    return {"five": five, "roles": roles, "drained": (drained, drained_count), "ffa": ffa}


def composed_table(pool: int, found: dict[str, Any]) -> None:
    drained, count = found["drained"]
    five = statistics.median(found["five"])
    print(f"| 5v5 from {pool:,} players, 20 matches per call (baseline) | p50 {five:.0f} ms | ≤ 250 ms |")
    print(
        f"| 5v5 from {pool:,} players under roles (1 tank, 1 healer, 3 damage; 15% heal, 20% tank), "
        f"20 matches per call | p50 {statistics.median(found['roles']):.0f} ms | ≤ 150 ms |"
    )
    print(
        f"| the same pool under roles, all its matches in one call | {drained:.0f} ms, {count} matches | - |"
    )
    print(
        f"| 100-player free-for-all from {pool:,} tickets, 10 matches per call "
        f"| p50 {statistics.median(found['ffa']):.0f} ms | ≤ 200 ms |"
    )


async def run(
    base: str, key: str, pool: int, producers: int, only: str | None, dump_path: str | None = None
) -> None:
    rng = random.Random(1)
    if only in ("roles", "ffa"):
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            found = await composed_cases(http, pool, rng)
        composed_table(pool, found)
        return
    if only == "stats":
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            reads, reference = await stats_case(http, STATS_POOL)
        for label, found in (("GET /stats", reads), ("for reference: GET /tickets/{id}", reference)):
            found.sort()
            print(
                f"| {label}, {STATS_POOL:,} tickets queued | p50 {statistics.median(found):.1f} ms, "
                f"p99 {found[int(len(found) * 0.99) - 1]:.1f} ms | p99 ≤ 5 ms |"
            )
        return
    if only == "estimates":
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            dump: list[dict[str, object]] | None = [] if dump_path else None
            phases = await estimates_case(http, rate=10.0, warmup=30.0, phase=30.0, dump=dump)
        if dump_path:
            Path(dump_path).write_text(json.dumps(dump))
        for name, estimated, matched, error, wait in phases:
            print(
                f"| wait estimates, 1v1, {'20' if name == 'doubled' else '10'} tickets/s ({name}): "
                f"{estimated} of {matched} matched had an estimate, median wait {wait:.1f} s | median "
                f"relative error {error:.0%} | ≤ 30% |"
            )
        return
    if only == "backfill":
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            timings, fills = await backfill_case(http, pool, rng)
        print(
            f"| matchmake, 5v5, {BACKFILLS} open backfills missing 1 to 4 players and a pool of {pool:,}, "
            f"20 new matches per call ({fills} fills in {len(timings)} calls) | "
            f"p50 {statistics.median(timings):.0f} ms | ≤ 150 ms |"
        )
        return
    if only == "latency":
        async with httpx.AsyncClient(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            latency = await latency_case(http, pool, rng)
        print(
            f"| matchmake, 1v1 pool of {pool:,}, three regions per ticket under a latency rule, "
            f"100 matches per call | p50 {statistics.median(latency):.0f} ms | ≤ 100 ms |"
        )
        return
    async with httpx.AsyncClient(
        base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120
    ) as http:
        # Thresholds of 0: the benchmark measures forming matches, not waiting for quality.
        relaxed = {"quality_start": 0.0, "quality_floor": 0.0, "ticket_ttl_seconds": 3600}
        await http.put("/v1/modes/bench-1v1", json=relaxed)
        players = [f"p{i}" for i in range(pool)]
        await seed_ratings(http, "bench-1v1", players, rng)

        await fill(http, "bench-1v1", players)
        one_v_one = []
        next_id = pool
        for _ in range(15):
            elapsed, made = await timed_matchmake(http, "bench-1v1", 100)
            one_v_one.append(elapsed)
            refill = [f"p{i}" for i in range(next_id, next_id + 2 * made)]
            next_id += len(refill)
            await fill(http, "bench-1v1", refill)

        composed = await composed_cases(http, pool, rng)

        # Sustained: producers keep enqueueing fresh players while a director matchmakes.
        await http.put("/v1/modes/bench-sustained", json=relaxed)
        rate, queue_rate = await sustained(base, key, producers, seconds=20)

        await http.put("/v1/modes/bench-single", json=relaxed)
        single = await single_ticket_rate(http, "bench-single", 10)

        latency = await latency_case(http, pool, rng)

    print(f"Matchmaking queue through HTTP, pool {pool:,}\n")
    print("| case | measured | goal |")
    print("|---|---|---|")
    p50_1v1 = statistics.median(one_v_one)
    print(f"| matchmake, 1v1 pool of {pool:,}, 100 matches per call | p50 {p50_1v1:.0f} ms | ≤ 100 ms |")
    print(
        f"| enqueue + matchmake, sustained ({producers} producers, batches of 100) "
        f"| {rate:,.0f} tickets matched/s ({queue_rate:,.0f} queued/s) | ≥ 10,000/s |"
    )
    composed_table(pool, composed)
    print(f"| for reference: one POST /tickets per ticket, 32 at a time | {single:,.0f} queued/s | - |")
    print(
        f"| matchmake, 1v1 pool of {pool:,}, three regions per ticket under a latency rule, "
        f"100 matches per call | p50 {statistics.median(latency):.0f} ms | ≤ 100 ms |"
    )


STATS_POOL = 100_000


async def stats_case(http: httpx.AsyncClient, pool: int, reads: int = 500) -> tuple[list[float], list[float]]:
    """Milliseconds per statistics read, one at a time, with `pool` tickets queued; and for
    reference, per read of a queued ticket (the same HTTP and key check, one HGET)."""
    mode = "bench-stats"
    await http.put(
        f"/v1/modes/{mode}", json={"quality_start": 0.99, "quality_floor": 0.99, "ticket_ttl_seconds": 3600}
    )
    rng = random.Random(2)
    await fill(http, mode, [f"s{i}" for i in range(pool)], batch=1000, rng=rng)
    await timed_matchmake(http, mode, 10)  # counts the waiting tickets (and forms next to none)
    ticket = (await http.post(f"/v1/queues/{mode}/tickets", json={"players": ["s-probe"]})).json()[
        "ticket_id"
    ]
    timings: tuple[list[float], list[float]] = ([], [])
    for _ in range(reads):
        for path, into in (
            (f"/v1/queues/{mode}/stats", timings[0]),
            (f"/v1/queues/{mode}/tickets/{ticket}", timings[1]),
        ):
            started = time.perf_counter()
            response = await http.get(path)
            response.raise_for_status()
            into.append((time.perf_counter() - started) * 1000)
    return timings


async def estimates_case(
    http: httpx.AsyncClient,
    rate: float,
    warmup: float,
    phase: float,
    players: int = 3000,
    dump: list[dict[str, object]] | None = None,
) -> list[tuple[str, int, int, float, float]]:
    """Per phase (name, tickets with an estimate, tickets matched, median relative error,
    median wait)."""
    mode = "bench-estimates"
    # Demanding thresholds, so that waits depend on who is around rather than on when the next
    # matchmaking call comes.
    settings = {"quality_start": 0.9, "quality_floor": 0.3, "relax_seconds": 30, "ticket_ttl_seconds": 600}
    await http.put(f"/v1/modes/{mode}", json=settings)
    rng = random.Random(3)
    names = [f"e{i}" for i in range(players)]
    semaphore = asyncio.Semaphore(64)

    ratings: dict[str, tuple[float, float]] = {}

    async def seed(player: str) -> None:
        async with semaphore:
            rating = {"mu": rng.gauss(25, 8), "sigma": rng.uniform(1, 3)}
            ratings[player] = (rating["mu"], rating["sigma"])
            (await http.put(f"/v1/players/{player}/ratings/{mode}", json=rating)).raise_for_status()

    await asyncio.gather(*(seed(name) for name in names))
    free = list(names)
    rng.shuffle(free)
    queued: dict[str, tuple[str, float, float | None, str]] = {}  # ticket -> player, at, estimate, phase
    errors: dict[str, list[float]] = {"steady": [], "doubled": []}
    actuals: dict[str, list[float]] = {"steady": [], "doubled": []}
    pairs: list[tuple[str, float, float]] = []
    counts = {"steady": [0, 0], "doubled": [0, 0]}
    started = time.monotonic()
    ends = {"warm-up": warmup, "steady": warmup + phase, "doubled": warmup + 2 * phase}
    stop = asyncio.Event()

    def phase_at(elapsed: float) -> str | None:
        for name, end in ends.items():
            if elapsed < end:
                return name
        return None

    async def arrive(player: str, name: str) -> None:
        at = time.monotonic()
        made = await http.post(f"/v1/queues/{mode}/tickets", json={"players": [player]})
        made.raise_for_status()
        ticket = made.json()["ticket_id"]
        # Known as queued before its estimate is read: a ticket matched meanwhile counts as
        # matched without an estimate (the table says how many had one), never as still waiting.
        queued[ticket] = (player, at, None, name)
        status = (await http.get(f"/v1/queues/{mode}/tickets/{ticket}")).json()
        if ticket in queued:
            queued[ticket] = (player, at, status.get("estimated_wait_s"), name)

    async def arrivals() -> None:
        # Each arrival is its own task, so the rate holds however long a request takes.
        arriving = set()
        next_at = time.monotonic()
        while (name := phase_at(time.monotonic() - started)) is not None:
            if free:
                task = asyncio.create_task(arrive(free.pop(), name))
                arriving.add(task)
                task.add_done_callback(arriving.discard)
            next_at += 1 / (rate * (2 if name == "doubled" else 1))
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        await asyncio.gather(*arriving)

    async def matchmaking() -> None:
        while not stop.is_set():
            response = await http.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 1000})
            response.raise_for_status()
            now = time.monotonic()
            for proposal in response.json()["matches"]:
                for ticket in proposal["ticket_ids"]:
                    found = queued.pop(ticket, None)
                    if found is None:
                        continue
                    player, at, estimate, name = found
                    free.insert(0, player)
                    if dump is not None:
                        dump.append(
                            {"player": player, "rating": ratings[player], "queued": at - started,
                             "matched": now - started, "estimate": estimate, "phase": name}
                        )  # fmt: skip
                    if name in errors:
                        counts[name][1] += 1
                        if estimate is not None:
                            counts[name][0] += 1
                            actual = now - at
                            actuals[name].append(actual)
                            errors[name].append(abs(estimate - actual) / actual)
                            pairs.append((name, estimate, actual))
            await asyncio.sleep(0.5)

    loop = asyncio.create_task(matchmaking())
    await arrivals()
    # Drain: the last tickets' waits count too (those still waiting after this are left out).
    drain_until = time.monotonic() + 30
    while time.monotonic() < drain_until and any(v[3] != "warm-up" for v in queued.values()):
        await asyncio.sleep(0.5)
    stop.set()
    await loop
    # Where the error comes from: estimates and actual waits, short (under 1.5 s: the next
    # matchmaking call or so) or long.
    for name in ("steady", "doubled"):
        got = [(e, a) for n, e, a in pairs if n == name]
        for label, short_estimate, short_actual in (
            ("short / short", True, True),
            ("short / long", True, False),
            ("long / short", False, True),
            ("long / long", False, False),
        ):
            chosen = [
                abs(e - a) / a for e, a in got if (e < 1.5) == short_estimate and (a < 1.5) == short_actual
            ]
            if chosen:
                print(f"| {name}: estimate / actual {label} | {len(chosen)} tickets | median relative error "
                      f"{statistics.median(chosen):.0%} |")  # fmt: skip
    return [
        (
            name,
            counts[name][0],
            counts[name][1],
            statistics.median(values) if values else float("nan"),
            statistics.median(actuals[name]) if actuals[name] else float("nan"),
        )
        for name, values in errors.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pool", type=int, default=10_000)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument(
        "--only",
        choices=["latency", "roles", "ffa", "stats", "estimates", "backfill"],
        help="run one case alone (roles and ffa: with 5v5 beside)",
    )
    parser.add_argument(
        "--dump",
        help="with --only estimates: write each matched ticket's rating, times and estimate here (JSON)",
    )
    args = parser.parse_args()
    with serving("queue", workers=args.workers) as served:
        asyncio.run(run(served.base, served.key, args.pool, args.producers, args.only, args.dump))


if __name__ == "__main__":
    main()
