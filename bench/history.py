"""TrueSkill Through Time speed and memory (issue #5), side by side with trueskillthroughtime 1.1.0.

    python bench/history.py [--skip-5m] [--datasets DIR]

The ATP case reads atp/atp_singles_1968_2024.csv.gz under `--datasets DIR` or
`$DATASETS_DIR` (not shipped with the repository: docs/datasets.md).

Three cases, each in its own process so that its peak memory (ru_maxrss, which includes
reading the data) is its own:

1. A 10,000-game 1v1 history (500 players, 1,000 time batches of 10 games, random winners):
   init plus 10 iterations, ours and the peer's (run with the exact math.erfc in place of its
   approximation, as in the oracle tests). How far apart the two are after the online pass
   and after 10 iterations, and how far each is then from the fixed point both converge to.
   Goal: at least 50× faster than the peer.
2. ATP singles (193,651 matches, 7,5xx players): init plus 10
   iterations. Goal: at most 5 s and 1 GB.
3. A synthetic 5,000,000-game 1v1 history (50,000 players, 7,300 daily batches): init plus
   10 iterations. Goal: at most 4 GB. The games are built as the package's call shape asks
   (a sequence of teams of names per game), with one list per player shared by every game
   it plays, so that the input itself takes ~0.9 GB rather than ~2 GB.
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

from app.evaluation.datasets import ENVIRONMENT, DatasetMissing, root  # noqa: E402
from app.rating.history import History  # noqa: E402


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


def timed(
    engine: Any, composition: Any, times: Any, iterations: int, **kwargs: Any
) -> tuple[Any, float, float]:
    started = time.perf_counter()
    history = engine(composition, times=times, **kwargs)
    built = time.perf_counter()
    for _ in range(iterations):
        history.iteration()
    return history, built - started, time.perf_counter() - built


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_10k() -> dict[str, Any]:
    import trueskillthroughtime as peer

    peer.erfc = math.erfc
    composition, times = ten_thousand()
    ours, our_init, our_iter = timed(History, composition, times, 10)
    online_ours = History(composition, times=times)
    online_peer = peer.History(composition, times=times)
    theirs, peer_init, peer_iter = timed(peer.History, composition, times, 10)
    fixed = History(composition, times=times)
    step, sweeps = fixed.convergence(epsilon=1e-10, iterations=20_000)
    return {
        "ours": [our_init, our_iter],
        "peer": [peer_init, peer_iter],
        "online_difference": largest_difference(online_ours, online_peer),
        "difference_after": largest_difference(ours, theirs),
        "ours_from_fixed": largest_difference(ours, fixed),
        "peer_from_fixed": largest_difference(theirs, fixed),
        "fixed_sweeps": sweeps,
        "fixed_step": step,
    }


def case_atp() -> dict[str, Any]:
    from app.evaluation.histories import atp

    data = atp(root("atp", None))
    _, init, sweeps = timed(
        History, data.composition, data.times, 10, results=data.results, sigma=1.6, gamma=0.036
    )
    return {"games": len(data.composition), "init": init, "iterations": sweeps, "peak_mb": peak_mb()}


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
    _, init, sweeps = timed(History, composition, days_played, 10, gamma=0.01)
    return {"games": games, "init": init, "iterations": sweeps, "peak_mb": peak_mb()}


CASES = {"10k": case_10k, "atp": case_atp, "5m": case_5m}


def run(case: str, datasets: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--case", case],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, ENVIRONMENT: str(datasets)},
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--skip-5m", action="store_true")
    parser.add_argument("--datasets", type=Path, metavar="DIR", help=f"holds atp/ (default: ${ENVIRONMENT})")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(CASES[args.case]()))
        return
    try:
        datasets = root("atp", args.datasets)
    except DatasetMissing as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    ten = run("10k", datasets)
    ours, theirs = sum(ten["ours"]), sum(ten["peer"])
    print("## 10,000 games, 500 players, 1,000 batches: init + 10 iterations\n")
    print("| engine | init s | 10 iterations s | total s |")
    print("|---|---|---|---|")
    print(f"| ours | {ten['ours'][0]:.3f} | {ten['ours'][1]:.3f} | {ours:.3f} |")
    print(f"| trueskillthroughtime 1.1.0 | {ten['peer'][0]:.2f} | {ten['peer'][1]:.2f} | {theirs:.2f} |")
    print(f"\npeer / ours: {theirs / ours:.1f}× (goal ≥ 50×)")
    print(f"online pass: largest curve difference {ten['online_difference']:.1e}")
    print(f"after 10 iterations: ours vs peer {ten['difference_after']:.1e}")
    print(
        f"distance to the common fixed point ({ten['fixed_sweeps']} sweeps to step "
        f"{ten['fixed_step']:.0e}): ours {ten['ours_from_fixed']:.1e}, peer {ten['peer_from_fixed']:.1e}"
    )
    atp = run("atp", datasets)
    print(f"\n## ATP singles, {atp['games']:,} games: init + 10 iterations\n")
    print("| init s | 10 iterations s | total s (goal ≤ 5) | peak MB (goal ≤ 1,024) |")
    print("|---|---|---|---|")
    print(
        f"| {atp['init']:.2f} | {atp['iterations']:.2f} | {atp['init'] + atp['iterations']:.2f} "
        f"| {atp['peak_mb']:.0f} |"
    )
    if not args.skip_5m:
        big = run("5m", datasets)
        print(f"\n## Synthetic {big['games']:,} games: init + 10 iterations\n")
        print("| init s | 10 iterations s | peak MB (goal ≤ 4,096) |")
        print("|---|---|---|")
        print(f"| {big['init']:.1f} | {big['iterations']:.1f} | {big['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
