"""A flood of random bearer keys against one worker: its memory and the answers it gives.

    python bench/auth_flood.py [--keys 30000] [--connections 16]

Starts the service as `make run` does (`serve`, one worker, embedded PostgreSQL and Redis,
the default limits), warms it with requests carrying the valid key (the connection pool and
the allocator settle), then sends KEYS requests each with a new random key, from this
machine's one address, over CONNECTIONS keep-alive connections, with a valid-key request
every 100th. Prints the worker's RSS when ready, after the warm-up and after the flood, the
answers to the random keys (only 401 and 429 are acceptable) and to the valid key (only
200: the failed-authentication limit never holds a valid key back).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse
import asyncio
import secrets
import time
from collections import Counter

import psutil

from bench.serving import RawHttp, serving

MB = 1024 * 1024


def random_key(n: int) -> str:
    # Half well-formed (`ssk_<id>_<secret>`), half free text (an ADMIN_API_KEY may be any text).
    return f"ssk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}" if n % 2 else secrets.token_urlsafe(40)


async def send(base: str, keys: list[str], connections: int) -> Counter[tuple[str, int]]:
    """(kind, status) counts; kind is 'random' or 'valid'."""
    counts: Counter[tuple[str, int]] = Counter()
    queue = iter(keys)

    async def connection() -> None:
        async with RawHttp(base, "") as http:
            for key in queue:
                kind = "valid" if key.startswith("bench-admin-key-") else "random"
                counts[kind, (await http.request("GET", "/v1/modes", key=key))[0]] += 1

    await asyncio.gather(*(connection() for _ in range(connections)))
    return counts


def rss(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=30_000)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=5_000)
    args = parser.parse_args()
    with serving("auth-flood") as served:
        ready = rss(served.pid)
        warm = asyncio.run(send(served.base, [served.key] * args.warmup, args.connections))
        if args.warmup and set(warm) != {("valid", 200)}:
            raise SystemExit(f"the warm-up got {dict(warm)}")
        before = rss(served.pid)
        flood = [served.key if n % 100 == 99 else random_key(n) for n in range(args.keys)]
        started = time.perf_counter()
        counts = asyncio.run(send(served.base, flood, args.connections))
        seconds = time.perf_counter() - started
        after = rss(served.pid)
    randoms = sum(n for (kind, _), n in counts.items() if kind == "random")
    print(
        f"{randoms} random keys and {len(flood) - randoms} valid-key requests in {seconds:.1f} s "
        f"({len(flood) / seconds:.0f} requests/s), {args.connections} connections, one address"
    )
    print("| | RSS MB |")
    print("| --- | ---: |")
    print(f"| ready | {ready:.1f} |")
    print(f"| after {args.warmup} valid-key requests | {before:.1f} |")
    print(f"| after the flood | {after:.1f} |")
    print(f"| growth over the flood | {after - before:+.1f} |")
    print(f"| growth since ready | {after - ready:+.1f} |")
    print("| answers | count |")
    print("| --- | ---: |")
    for (kind, status), n in sorted(counts.items()):
        print(f"| {kind} key: {status} | {n} |")
    bad = {k: n for k, n in counts.items() if k not in (("random", 401), ("random", 429), ("valid", 200))}
    if bad:
        raise SystemExit(f"unexpected answers: {bad}")


if __name__ == "__main__":
    main()
