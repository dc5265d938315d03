"""Rating engine speed, side by side with the peers, in one run.

    python bench/rating.py [--quick] [--rounds N]

Median microseconds per call (lower is better) for each shape, the 8-team match quality,
and the batch path's 1v1 updates per second. Peers: trueskill 0.4.5 (its default
pure-Python backend), openskill PlackettLuce, trueskillthroughtime 1.1.0 Game.

The engines are timed in interleaved rounds (every engine once per round, in a rotating
order) on the process's CPU clock, and each ratio is the median of the per-round ratios:
on a shared machine, other processes then slow every engine of a round alike instead of
whichever one happened to run while they did.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import trueskill
import trueskillthroughtime as ttt
from openskill.models import PlackettLuce

from app.rating import Rating, TrueSkill

SHAPES = {
    # name: (team sizes, ranks, draw probability)
    "1v1": ([1, 1], [0, 1], 0.10),
    "1v1 draw": ([1, 1], [0, 0], 0.10),
    "2v2": ([2, 2], [0, 1], 0.10),
    "5v5": ([5, 5], [0, 1], 0.10),
    "[1],[2],[1] tie": ([1, 2, 1], [0, 1, 1], 0.25),
    "4-player FFA": ([1] * 4, list(range(4)), 0.10),
    "8-player FFA": ([1] * 8, list(range(8)), 0.10),
}


# The least "fastest peer / this engine" each shape must reach: 2× faster on the two-team
# shapes of issue #36 (1v1, 2v2), within 2× of the peer on the others (openskill's
# Plackett–Luce has no EP sweeps). Every shape must also be 10× faster than trueskill.
PEER_GOALS = {"1v1": 2.0, "2v2": 2.0}
OTHER_PEER_GOAL = 0.5
TRUESKILL_GOAL = 10.0


def chunk_size(fn: Callable[[], object], seconds: float) -> int:
    """How many calls take about `seconds` of CPU time."""
    number = 1
    while True:
        elapsed = timeit.timeit(fn, number=number, timer=time.process_time)
        if elapsed > 0.01:
            return max(1, int(number * seconds / elapsed))
        number *= 4


def interleaved(fns: dict[str, Callable[[], object]], rounds: int, seconds: float) -> dict[str, list[float]]:
    """Microseconds per call of each function, one chunk of about `seconds` per round,
    the functions taken in a rotating order round by round."""
    numbers = {name: chunk_size(fn, seconds) for name, fn in fns.items()}
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            elapsed = timeit.timeit(fns[name], number=numbers[name], timer=time.process_time)
            times[name].append(elapsed / numbers[name] * 1e6)
    return times


def median_ratio(slower: list[float], faster: list[float]) -> float:
    """The median over rounds of slower/faster, each round's pair timed side by side."""
    return statistics.median(s / f for s, f in zip(slower, faster, strict=True))


def ours(sizes: list[int], ranks: list[int], p: float) -> Callable[[], object]:
    env = TrueSkill(draw_probability=p)
    groups = [tuple(Rating(25 + i + j, 8.333 - 0.2 * i) for j in range(n)) for i, n in enumerate(sizes)]
    return lambda: env.rate(groups, ranks)


def peer_trueskill(sizes: list[int], ranks: list[int], p: float) -> Callable[[], object]:
    env = trueskill.TrueSkill(draw_probability=p)
    groups = [
        tuple(env.create_rating(25 + i + j, 8.333 - 0.2 * i) for j in range(n)) for i, n in enumerate(sizes)
    ]
    return lambda: env.rate(groups, ranks)


def peer_openskill(sizes: list[int], ranks: list[int], p: float) -> Callable[[], object]:
    model = PlackettLuce()
    teams = [[model.rating(25 + i + j, 8.333 - 0.2 * i) for j in range(n)] for i, n in enumerate(sizes)]
    return lambda: model.rate(teams, ranks=ranks)


def peer_ttt(sizes: list[int], ranks: list[int], p: float) -> Callable[[], object]:
    teams = [
        [ttt.Player(ttt.Gaussian(25 + i + j, 8.333 - 0.2 * i), 25 / 6, 25 / 300) for j in range(n)]
        for i, n in enumerate(sizes)
    ]
    result = [float(max(ranks) - r) for r in ranks]  # higher is better in TTT
    return lambda: ttt.Game(teams, result, p_draw=p if len(set(ranks)) < len(ranks) else 0.0).posteriors()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 15, quick 5)")
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 15)
    seconds = 0.02 if args.quick else 0.05
    peers = {
        "this engine": ours,
        "trueskill 0.4.5": peer_trueskill,
        "openskill PL": peer_openskill,
        "trueskillthroughtime": peer_ttt,
    }
    runs = {
        shape: interleaved({name: make(*spec) for name, make in peers.items()}, rounds, seconds)
        for shape, spec in SHAPES.items()
    }
    print(f"Median µs per rate() call (lower is better), {rounds} interleaved rounds, CPU time\n")
    print("| engine | " + " | ".join(SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for name in peers:
        cells = " | ".join(f"{statistics.median(runs[s][name]):.1f}" for s in SHAPES)
        print(f"| {name} | {cells} |")
    print("\nRatio: fastest peer / this engine, and trueskill / this engine (median of per-round ratios)\n")
    print("| shape | fastest peer | ×fastest peer | ×trueskill | goal | met |")
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        times = runs[shape]
        mine = times["this engine"]
        peer_name = min((n for n in peers if n != "this engine"), key=lambda n: statistics.median(times[n]))
        versus_peer = median_ratio(times[peer_name], mine)
        versus_trueskill = median_ratio(times["trueskill 0.4.5"], mine)
        floor = PEER_GOALS.get(shape, OTHER_PEER_GOAL)
        met = versus_peer >= floor and versus_trueskill >= TRUESKILL_GOAL
        print(
            f"| {shape} | {peer_name} | {versus_peer:.2f} | {versus_trueskill:.1f} | "
            f"×{floor:g} peer, ×{TRUESKILL_GOAL:g} trueskill | {'yes' if met else 'NO'} |"
        )

    env, peer = TrueSkill(), trueskill.TrueSkill()
    mine_q = [(Rating(25 + i, 8 - 0.3 * i),) for i in range(8)]
    theirs_q = [(peer.create_rating(25 + i, 8 - 0.3 * i),) for i in range(8)]
    quality = interleaved(
        {"ours": lambda: env.quality(mine_q), "trueskill": lambda: peer.quality(theirs_q)}, rounds, seconds
    )
    print(
        f"\n8-team quality: this engine {statistics.median(quality['ours']):.1f} µs, trueskill "
        f"{statistics.median(quality['trueskill']):.1f} µs "
        f"(×{median_ratio(quality['trueskill'], quality['ours']):.0f}; goal ×20)"
    )

    n = 1_000_000
    rng = np.random.default_rng(0)
    wm, lm = rng.uniform(0, 50, n), rng.uniform(0, 50, n)
    ws, ls = rng.uniform(1, 8, n), rng.uniform(1, 8, n)
    env.rate_1vs1_batch(wm[:1000], ws[:1000], lm[:1000], ls[:1000])
    timings = []
    for _ in range(3):
        start = time.process_time()
        env.rate_1vs1_batch(wm, ws, lm, ls)
        timings.append(time.process_time() - start)
    print(
        f"Batch path: {n / min(timings) / 1e6:.2f} million independent 1v1 updates per second "
        "(one core; goal 2 million)"
    )


if __name__ == "__main__":
    main()
