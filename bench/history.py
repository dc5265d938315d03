"""TrueSkill Through Time speed, side by side with trueskillthroughtime 1.1.0, in one run.

    python bench/history.py [--iterations 10]

A 10,000-game 1v1 history: 500 players, 1,000 time batches of 10 games, random winners.
Seconds for the initial pass (online TrueSkill) and for `iterations` sweeps, and the
largest difference between the two engines' learning curves afterwards (the peer is run
with the exact math.erfc in place of its approximation, as in the oracle tests).
Goal (issue #5): init plus 10 iterations at least 50× faster than the peer.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trueskillthroughtime as peer

from app.rating.history import History


def history(seed: int = 0) -> tuple[list[list[list[str]]], list[float]]:
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(500)]
    composition, times = [], []
    for batch in range(1000):
        for _ in range(10):
            a, b = rng.sample(players, 2)
            composition.append([[a], [b]])
            times.append(float(batch))
    return composition, times


def run(engine: type, composition: list, times: list[float], iterations: int) -> tuple[object, float, float]:  # type: ignore[type-arg]
    started = time.perf_counter()
    h = engine(composition, times=times)
    built = time.perf_counter()
    for _ in range(iterations):
        h.iteration()
    return h, built - started, time.perf_counter() - built


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=10)
    args = parser.parse_args()
    peer.erfc = math.erfc
    composition, times = history()
    ours, our_init, our_iter = run(History, composition, times, args.iterations)
    theirs, peer_init, peer_iter = run(peer.History, composition, times, args.iterations)
    worst = 0.0
    mine, other = ours.learning_curves(), theirs.learning_curves()  # type: ignore[attr-defined]
    for name, curve in mine.items():
        for (_, a), (_, b) in zip(curve, other[name], strict=True):
            worst = max(worst, abs(a.mu - b.mu), abs(a.sigma - b.sigma))
    print(f"10,000 games, 500 players, 1,000 batches; init + {args.iterations} iterations\n")
    print("| engine | init s | iterations s | total s |")
    print("|---|---|---|---|")
    print(f"| ours | {our_init:.2f} | {our_iter:.2f} | {our_init + our_iter:.2f} |")
    print(f"| trueskillthroughtime 1.1.0 | {peer_init:.2f} | {peer_iter:.2f} | {peer_init + peer_iter:.2f} |")
    ratio = (peer_init + peer_iter) / (our_init + our_iter)
    print(f"\npeer / ours: {ratio:.2f}×; largest curve difference {worst:.1e}")


if __name__ == "__main__":
    main()
