"""Rating engine speed, side by side with the peers, in one run.

    python bench/rating.py [--quick]

Median microseconds per call (lower is better) for four shapes, the 8-team match
quality, and the batch path's 1v1 updates per second. Peers: trueskill 0.4.5 (its
default pure-Python backend), openskill PlackettLuce, trueskillthroughtime 1.1.0 Game.
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
    "2v2": ([2, 2], [0, 1], 0.10),
    "[1],[2],[1] tie": ([1, 2, 1], [0, 1, 1], 0.25),
    "8-player FFA": ([1] * 8, list(range(8)), 0.10),
}


# The least "fastest peer / this engine" each shape must reach: 2× faster on the two-team
# shapes, within 2× of the peer on the others (openskill's Plackett–Luce has no EP sweeps).
PEER_GOALS = {"1v1": 2.0, "2v2": 2.0, "[1],[2],[1] tie": 0.5, "8-player FFA": 0.5}


def per_call(fn: Callable[[], object], budget: float) -> float:
    """Median microseconds per call over 7 repeats of about budget/7 seconds each."""
    number = 1
    while True:
        elapsed = timeit.timeit(fn, number=number)
        if elapsed > 0.02:
            break
        number *= 4
    number = max(1, int(number * budget / 7 / elapsed))
    return statistics.median(timeit.repeat(fn, number=number, repeat=7)) / number * 1e6


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
    budget = 0.3 if parser.parse_args().quick else 1.5
    peers = {
        "this engine": ours,
        "trueskill 0.4.5": peer_trueskill,
        "openskill PL": peer_openskill,
        "trueskillthroughtime": peer_ttt,
    }
    table = {
        name: {shape: per_call(make(*spec), budget) for shape, spec in SHAPES.items()}
        for name, make in peers.items()
    }
    print("Median µs per rate() call (lower is better)\n")
    print("| engine | " + " | ".join(SHAPES) + " |")
    print("|---|" + "---|" * len(SHAPES))
    for name, row in table.items():
        print(f"| {name} | " + " | ".join(f"{row[s]:.1f}" for s in SHAPES) + " |")
    print("\nRatio: fastest peer / this engine, and trueskill / this engine (goals of issue #22)\n")
    print("| shape | fastest peer | ×fastest peer | ×trueskill | goal | met |")
    print("|---|---|---|---|---|---|")
    for shape in SHAPES:
        peer_name = min((n for n in table if n != "this engine"), key=lambda n: table[n][shape])
        mine = table["this engine"][shape]
        versus_peer = table[peer_name][shape] / mine
        versus_trueskill = table["trueskill 0.4.5"][shape] / mine
        floor = PEER_GOALS[shape]
        met = versus_peer >= floor and versus_trueskill >= 10.0
        print(
            f"| {shape} | {peer_name} | {versus_peer:.2f} | {versus_trueskill:.1f} | "
            f"×{floor:g} peer, ×10 trueskill | {'yes' if met else 'NO'} |"
        )

    env, peer = TrueSkill(), trueskill.TrueSkill()
    mine_q = [(Rating(25 + i, 8 - 0.3 * i),) for i in range(8)]
    theirs_q = [(peer.create_rating(25 + i, 8 - 0.3 * i),) for i in range(8)]
    q_ours = per_call(lambda: env.quality(mine_q), budget)
    q_peer = per_call(lambda: peer.quality(theirs_q), budget)
    print(
        f"\n8-team quality: this engine {q_ours:.1f} µs, trueskill {q_peer:.1f} µs "
        f"(×{q_peer / q_ours:.0f}; goal ×20)"
    )

    n = 1_000_000
    rng = np.random.default_rng(0)
    wm, lm = rng.uniform(0, 50, n), rng.uniform(0, 50, n)
    ws, ls = rng.uniform(1, 8, n), rng.uniform(1, 8, n)
    env.rate_1vs1_batch(wm[:1000], ws[:1000], lm[:1000], ls[:1000])
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        env.rate_1vs1_batch(wm, ws, lm, ls)
        timings.append(time.perf_counter() - start)
    print(
        f"Batch path: {n / min(timings) / 1e6:.2f} million independent 1v1 updates per second "
        "(one core; goal 2 million)"
    )


if __name__ == "__main__":
    main()
