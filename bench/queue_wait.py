"""Long-polls on queue tickets: how soon a match reaches the poll waiting for it.

    python bench/queue_wait.py [--polls 5000] [--rate 2000] [--seconds 15] [--refill]

Starts the service as `make run` does (embedded PostgreSQL and Redis) with ONE worker
process, queues POLLS tickets and holds a long-poll (`GET …/tickets/{id}?wait=60`) open on
each, one connection per poll. A director then makes matches at RATE tickets a second (a
matchmake call of RATE/20 matches every 100 ms, on the same process) until every ticket is
matched or SECONDS pass. With --refill, after each call it queues as many fresh tickets,
whose polls take over the connections just answered: about POLLS polls wait all along
(the service then also takes RATE new polls and tickets a second). Per matched ticket it
records when its poll answered, against the matchmake call that matched it: from the
call's response (the claim was earlier, so this is a lower bound) and from its request (an
upper bound). Also the service
process's RSS and its CPU share over the run (from /proc).

The load generator shares the machine's cores with the service, so it speaks HTTP/1.1 over
plain sockets rather than httpx.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module: import bench modules
# as a package from the repository root.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import json
import os
import statistics
import time

import httpx

from bench.serving import RawHttp, serving

MODE = "bench-wait"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def enqueue(http: RawHttp, start: int, count: int) -> list[str]:
    tickets = ",".join(f'{{"players":["w{n}"]}}' for n in range(start, start + count))
    status, body = await http.request(
        "POST", f"/v1/queues/{MODE}/tickets/batch", f'{{"tickets":[{tickets}]}}'.encode()
    )
    if status != 200:
        raise SystemExit(f"enqueue: {status} {body[:200]!r}")
    return [t["ticket_id"] for t in json.loads(body)["tickets"]]


async def run(base: str, key: str, pid: int, polls: int, rate: int, seconds: float, refill: bool) -> None:
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {key}"}) as http:
        relaxed = {"quality_start": 0.0, "quality_floor": 0.0, "ticket_ttl_seconds": 3600}
        (await http.put(f"/v1/modes/{MODE}", json=relaxed)).raise_for_status()
    control = RawHttp(base, key)
    await control.open()
    fresh: asyncio.Queue[str] = asyncio.Queue()
    next_player = 0
    for _ in range(0, polls, 500):
        for ticket in await enqueue(control, next_player, 500):
            fresh.put_nowait(ticket)
        next_player += 500
    answered: dict[str, tuple[float, str]] = {}
    stop = asyncio.Event()

    opening = asyncio.Semaphore(250)  # within the listen backlog

    async def poller(connection: RawHttp) -> None:
        # Opened just before its first poll: the service closes connections idle for
        # HTTP_KEEP_ALIVE_S.
        async with opening:
            await connection.open()
        while not stop.is_set():
            ticket = await fresh.get()
            status, body = await connection.request("GET", f"/v1/queues/{MODE}/tickets/{ticket}?wait=60")
            if status != 200:
                raise SystemExit(f"poll: {status} {body[:200]!r}")
            answered[ticket] = (time.perf_counter(), json.loads(body)["status"])

    connections = [RawHttp(base, key) for _ in range(polls)]
    workers = [asyncio.create_task(poller(c)) for c in connections]
    while not fresh.empty():  # every poll sent
        await asyncio.sleep(0.5)
    # ... and taken in: the service works through the polls sent, then idles.
    for _ in range(120):
        before = cpu_seconds(pid)
        await asyncio.sleep(0.5)
        if cpu_seconds(pid) - before < 0.05:
            break
    per_call = max(1, rate // 20)  # matches of two tickets, 10 calls a second
    matched_at: dict[str, tuple[float, float]] = {}
    control.close()  # idle while the polls were sent: the service may have closed it
    control = RawHttp(base, key)
    await control.open()
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    rss_peak = 0.0
    while time.perf_counter() - started < seconds:
        tick = time.perf_counter()
        sent = time.perf_counter()
        status, body = await control.request(
            "POST", f"/v1/queues/{MODE}/matchmake", f'{{"max_matches":{per_call}}}'.encode()
        )
        received = time.perf_counter()
        if status != 200:
            raise SystemExit(f"matchmake: {status} {body[:200]!r}")
        made = [t for m in json.loads(body)["matches"] for t in m["ticket_ids"]]
        for ticket in made:
            matched_at[ticket] = (sent, received)
        if refill:
            for ticket in await enqueue(control, next_player, len(made)):
                fresh.put_nowait(ticket)
            next_player += len(made)
        elif not made:
            break  # every poll answered
        rss_peak = max(rss_peak, memory_mb(pid, "VmRSS"))
        await asyncio.sleep(max(0.0, 0.1 - (time.perf_counter() - tick)))
    elapsed = time.perf_counter() - started
    cpu = (cpu_seconds(pid) - cpu_before) / elapsed
    await asyncio.sleep(1.0)  # the last matches' polls answer
    stop.set()
    for worker in workers:
        worker.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    for connection in connections:
        connection.close()
    control.close()

    done = [t for t in matched_at if t in answered]
    after_response = sorted(max(0.0, answered[t][0] - matched_at[t][1]) * 1000 for t in done)
    after_request = sorted((answered[t][0] - matched_at[t][0]) * 1000 for t in done)
    wrong = sum(answered[t][1] != "matched" for t in done)

    def p(values: list[float], percent: int) -> str:
        return f"{statistics.quantiles(values, n=100)[percent - 1]:.1f} ms"

    print(f"Long-polls on one process: {polls:,} waiting, matches at {rate:,} tickets/s for {seconds:g} s\n")
    print("| measure | value | goal |")
    print("|---|---|---|")
    print(f"| tickets matched (and their polls answered) | {len(matched_at):,} ({len(done):,}) | - |")
    print(f"| matched tickets/s | {len(matched_at) / elapsed:,.0f} | up to {rate:,} |")
    print(
        f"| match → poll answer, from matchmake's response (lower bound) "
        f"| p50 {p(after_response, 50)}, p99 {p(after_response, 99)} | p99 ≤ 100 ms |"
    )
    print(
        f"| match → poll answer, from matchmake's request (upper bound) "
        f"| p50 {p(after_request, 50)}, p99 {p(after_request, 99)} | - |"
    )
    print(f"| polls answered with a status other than matched | {wrong} | 0 |")
    print(
        f"| service RSS (peak during the run / VmHWM) | {rss_peak:.0f} MB / "
        f"{memory_mb(pid, 'VmHWM'):.0f} MB | - |"
    )
    print(f"| service CPU | {100 * cpu:.0f}% of a core | - |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--polls", type=int, default=5000)
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument(
        "--refill", action="store_true", help="queue and poll a fresh ticket for each one matched"
    )
    args = parser.parse_args()
    with serving("queue-wait", workers=1) as served:
        asyncio.run(
            run(served.base, served.key, served.pid, args.polls, args.rate, args.seconds, args.refill)
        )


if __name__ == "__main__":
    main()
