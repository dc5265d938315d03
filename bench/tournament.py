"""Seed 002 at tournament scale: one 1,000-team tournament with 60 places, side by side.

    python bench/tournament.py

Rates the same tournament (synthetic, app/evaluation/synthetic.py: teams of 1–6 players,
ranked into 60 distinct scores, so dozens of tied groups) with each of our models and, as
the baseline, the trueskill 0.4.5 package (TrueSkill's chain; it has no tie layer). Two
rating states: every player new, and players with spread-out ratings from earlier play.
Goal (issue #4): the tie layer rates it in under 1 s.
"""

from __future__ import annotations

import functools
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import trueskill

from app.evaluation.synthetic import tournaments
from app.rating import Rating, TrueSkill

TEAMS, PLACES = 1000, 60
MODELS = (
    ("chain", "sum"),
    ("chain", "size-penalised-mean"),
    ("tie-layer", "sum"),
    ("tie-layer", "size-penalised-mean"),
)


def timed(fn: Callable[[], object], repeats: int) -> float:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def main() -> None:
    (tournament,) = tournaments(1, min_teams=TEAMS, max_teams=TEAMS, levels=(PLACES, PLACES), seed=4)
    players = sum(len(r) for r in tournament.rosters)
    print(f"{TEAMS} teams, {len(set(tournament.ranks))} places, {players} players; median of 5 runs\n")
    rng = random.Random(9)
    states = {
        "new players": {p: Rating(3000.0, 1000.0) for r in tournament.rosters for p in r},
        "rated players": {
            p: Rating(rng.gauss(3000.0, 400.0), rng.uniform(80.0, 600.0))
            for r in tournament.rosters
            for p in r
        },
    }
    print("| ratings | model | seconds |")
    print("|---|---|---|")
    for state, ratings in states.items():
        groups = [[ratings[p] for p in roster] for roster in tournament.rosters]
        for tie_model, performance in MODELS:
            env = TrueSkill(
                3000.0, 1000.0, 400.0, 10.0, 0.1, tie_model=tie_model, team_performance=performance
            )
            seconds = timed(functools.partial(env.rate, groups, tournament.ranks), 5)
            print(f"| {state} | ours: {tie_model}, {performance} | {seconds:.3f} |", flush=True)
        peer = trueskill.TrueSkill(3000.0, 1000.0, 400.0, 10.0, 0.1)
        peer_groups = [[peer.create_rating(r.mu, r.sigma) for r in g] for g in groups]
        ranks = [int(r - min(tournament.ranks)) for r in tournament.ranks]
        seconds = timed(functools.partial(peer.rate, peer_groups, ranks), 1)
        print(f"| {state} | trueskill 0.4.5: chain, sum | {seconds:.3f} |", flush=True)


if __name__ == "__main__":
    main()
