"""TrueSkill Through Time: time to the fixed point (issue #21), beside trueskillthroughtime 1.1.0.

    python bench/history.py [--datasets DIR] [--skip-5m]

"Within ε of the fixed point" is the largest |Δmu| or |Δsigma| over every learning-curve
point against a reference run (ours, to a step of 1e-12 or less). Each case runs in its own
process, so that its peak memory (ru_maxrss, which includes reading the data) is its own:

1. A 10,000-game 1v1 history (500 players, 1,000 time batches of 10 games, random winners):
   init plus `convergence()` to 1e-6, ours, timed; its distance to the reference. In the same
   run, the peer (with the exact math.erfc in place of its approximation, as in the oracle
   tests): init plus 10 and plus 30 iterations, timed, and their distances. Goal: ours
   within 1e-6 in at most 1.0 s, init included.
2. ATP singles (DIR/atp, from --datasets or DATASETS_DIR; skipped without it): init plus
   `convergence()` to 1e-6; distance to a reference. Goal: at most 15 s.
3. A synthetic 5,000,000-game 1v1 history (50,000 players, 7,300 daily batches): init plus
   a default smooth (1e-6, at most 1,000 sweeps): time, sweeps, the distance estimated,
   peak memory (and the peak by the end of init, input included). Goal: at most 4 GB. The
   games are built as the package's call shape asks (a sequence of teams of names per game),
   with one list per player shared by every game it plays, so that the input itself takes
   ~0.9 GB rather than ~2 GB; it is dropped once the history is built.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.rating.history import History  # noqa: E402

EPSILON = 1e-6
CAP = 1000


def ten_thousand(seed: int = 0) -> tuple[list[list[list[str]]], list[float]]:
    rng = random.Random(seed)
    players = [f"p{i}" for i in range(500)]
    composition, times = [], []
    for batch in range(1000):
        for _ in range(10):
            a, b = rng.sample(players, 2)
            composition.append([[a], [b]])
            times.append(float(batch))
    return composition, times


def largest_difference(a: Any, b: Any) -> float:
    worst = 0.0
    theirs = b.learning_curves()
    for name, curve in a.learning_curves().items():
        for (_, x), (_, y) in zip(curve, theirs[name], strict=True):
            worst = max(worst, abs(x.mu - y.mu), abs(x.sigma - y.sigma))
    return worst


def timed(engine: Any, composition: Any, times: Any, iterations: int, **kwargs: Any) -> tuple[Any, float]:
    """The peer's shape: init plus `iterations` plain iterations."""
    started = time.perf_counter()
    history = engine(composition, times=times, **kwargs)
    for _ in range(iterations):
        history.iteration()
    return history, time.perf_counter() - started


def converged(composition: Any, times: Any, **kwargs: Any) -> tuple[History, float, int]:
    """Ours: init plus convergence() to EPSILON."""
    started = time.perf_counter()
    history = History(composition, times=times, **kwargs)
    _, sweeps = history.convergence(EPSILON, CAP)
    return history, time.perf_counter() - started, sweeps


def reference(composition: Any, times: Any, **kwargs: Any) -> History:
    fixed = History(composition, times=times, **kwargs)
    fixed.convergence(1e-12, 20_000)
    return fixed


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_10k() -> dict[str, Any]:
    import trueskillthroughtime as peer

    peer.erfc = math.erfc
    composition, times = ten_thousand()
    ours, our_time, sweeps = converged(composition, times)
    fixed = reference(composition, times)
    peer_10, peer_10_time = timed(peer.History, composition, times, 10)
    peer_30, peer_30_time = timed(peer.History, composition, times, 30)
    return {
        "ours": [our_time, sweeps, largest_difference(ours, fixed), ours.distance],
        "peer_10": [peer_10_time, largest_difference(peer_10, fixed)],
        "peer_30": [peer_30_time, largest_difference(peer_30, fixed)],
    }


def case_atp() -> dict[str, Any]:
    from app.evaluation.histories import atp

    data = atp(Path(os.environ["DATASETS_DIR"]))
    kwargs: dict[str, Any] = {"results": data.results, "sigma": 1.6, "gamma": 0.036}
    ours, our_time, sweeps = converged(data.composition, data.times, **kwargs)
    peak = peak_mb()
    fixed = History(data.composition, times=data.times, **kwargs)
    fixed.convergence(1e-10, 3000)
    return {
        "games": len(data.composition),
        "batches": len(ours.batches),
        "ours": [our_time, sweeps, largest_difference(ours, fixed), ours.distance],
        "peak_mb": peak,
    }


def case_5m() -> dict[str, Any]:
    import numpy as np

    games, players, days = 5_000_000, 50_000, 7_300
    rng = np.random.default_rng(0)
    first = rng.integers(0, players, games)
    second = (first + rng.integers(1, players, games)) % players
    days_played = np.sort(rng.integers(0, days, games)).astype(float).tolist()
    teams = [[f"p{i}"] for i in range(players)]
    composition = [(teams[a], teams[b]) for a, b in zip(first.tolist(), second.tolist(), strict=True)]
    del first, second
    started = time.perf_counter()
    history = History(composition, times=days_played, gamma=0.01)
    init = time.perf_counter() - started
    init_mb = peak_mb()
    # The history keeps flat arrays only: the input's ~1 GB of Python lists is the caller's,
    # and a smooth need not hold it while it sweeps.
    del composition, days_played, teams
    _, sweeps = history.convergence(EPSILON, CAP)
    took = time.perf_counter() - started
    return {
        "games": games,
        "init": init,
        "init_mb": init_mb,
        "total": took,
        "sweeps": sweeps,
        "distance": history.distance,
        "capped": history.capped,
        "peak_mb": peak_mb(),
    }


CASES = {"10k": case_10k, "atp": case_atp, "5m": case_5m}


def run(case: str, datasets: str | None) -> dict[str, Any]:
    env = dict(os.environ, **({"DATASETS_DIR": datasets} if datasets else {}))
    out = subprocess.run(
        [sys.executable, __file__, "--case", case], capture_output=True, text=True, check=True, env=env
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument(
        "--datasets", default=os.environ.get("DATASETS_DIR"), help="holds atp/ (or DATASETS_DIR)"
    )
    parser.add_argument("--skip-5m", action="store_true")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(CASES[args.case]()))
        return
    ten = run("10k", args.datasets)
    print("## 10,000 games, 500 players, 1,000 batches: time to the fixed point\n")
    print("| engine | call | s (init included) | distance to the fixed point |")
    print("|---|---|---|---|")
    seconds, sweeps, distance, estimate = ten["ours"]
    call = f"convergence() to 1e-6: {sweeps} sweeps"
    print(f"| ours | {call} | {seconds:.3f} | {distance:.1e} (estimated {estimate:.1e}) |")
    for label, key in (("10 iterations", "peer_10"), ("30 iterations", "peer_30")):
        print(f"| trueskillthroughtime 1.1.0 | {label} | {ten[key][0]:.2f} | {ten[key][1]:.1e} |")
    if args.datasets:
        atp = run("atp", args.datasets)
        seconds, sweeps, distance, estimate = atp["ours"]
        print(
            f"\n## ATP singles, {atp['games']:,} games, {atp['batches']:,} batches: convergence() to 1e-6\n"
        )
        print("| s (init included; goal ≤ 15) | sweeps | distance to the fixed point | peak MB |")
        print("|---|---|---|---|")
        print(
            f"| {seconds:.2f} | {sweeps} | {distance:.1e} (estimated {estimate:.1e}) | {atp['peak_mb']:.0f} |"
        )
    else:
        print("\n(ATP skipped: give --datasets DIR or DATASETS_DIR)")
    if not args.skip_5m:
        big = run("5m", args.datasets)
        print(f"\n## Synthetic {big['games']:,} games: a default smooth (1e-6, at most {CAP} sweeps)\n")
        print("| init s | total s | sweeps | distance bound | capped | peak MB at init | peak MB (≤ 4,096) |")
        print("|---|---|---|---|---|---|---|")
        print(
            f"| {big['init']:.1f} | {big['total']:.1f} | {big['sweeps']} | {big['distance']:.1e} "
            f"| {big['capped']} | {big['init_mb']:.0f} | {big['peak_mb']:.0f} |"
        )


if __name__ == "__main__":
    main()
