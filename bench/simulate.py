"""The virtual clock's speed: one simulated hour of 10,000 players at 3 matches each an hour.

    python bench/simulate.py [--players 10000] [--shape 1v1 --shape 4v4 --shape 5v5-roles]

The population arrives over the first 20 minutes (about 8.3 players a second) and stays,
each player playing matches of 19 minutes (sd 2) with a minute's pause between: a match
every 20 minutes, 3 an hour, so each player forms 3 matches in the simulated hour. The loop
is the service's matchmaking (every second of simulated time) and rating, as
`skillservice simulate` runs it; beside it, in the same run, the same loop with random
pairing (no quality matchmaking), which shows what the matchmaking itself costs. The role
queue is docs/scenarios/5v5-roles.toml's: one tank, two damage and two support a team, its
players' preference mix, parties and avoid lists.
Goal (issue 40): the hour in at most 60 s of wall time.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# bench/queue.py would shadow the standard library's queue module: import from the repository
# root instead of from this folder.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

from app.simulation.population import Streams, build
from app.simulation.reading import scenario_of
from app.simulation.virtual import run_virtual

GOAL_SECONDS = 60.0
SCENARIOS = Path(__file__).resolve().parents[1] / "docs" / "scenarios"
ROLE_QUEUE = tomllib.loads((SCENARIOS / "5v5-roles.toml").read_text(encoding="utf-8"))
# Per shape: the mode, the parties, and what the population adds.
SHAPES: dict[str, tuple[dict[str, Any], dict[str, float], dict[str, Any]]] = {
    "1v1": ({"teams": 2, "team_size": 1}, {"1": 1.0}, {}),
    "4v4": ({"teams": 2, "team_size": 4}, {"1": 0.7, "2": 0.2, "4": 0.1}, {}),
    "5v5-roles": (
        {"teams": 2, "team_size": 5, "roles": ROLE_QUEUE["mode"]["roles"]},
        ROLE_QUEUE["parties"],
        {key: ROLE_QUEUE["population"][key] for key in ("roles", "avoid_probability", "avoid_list")},
    ),
}


def scenario(players: int, shape: str) -> dict[str, Any]:
    mode, parties, population = SHAPES[shape]
    return {
        "seed": 1,
        "duration": "1h",
        "population": {"size": players, **population},
        # Everyone arrives within the first 20 minutes: one match cycle.
        "arrivals": {"players_per_second": players / 1200},
        "sessions": {
            "matches": 1000,
            "fixed": True,
            "pause_seconds": 60,
            "match_seconds": 1140,
            "match_seconds_sd": 120,
        },
        "parties": parties,
        "mode": mode,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=10_000)
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append")
    args = parser.parse_args()
    print(f"one simulated hour, {args.players:,} players, matchmaking every simulated second\n")
    print(
        "| shape | pairing | matches | matches per player | wall s | simulated s per wall s | goal ≤ 60 s |"
    )
    print("|---|---|---|---|---|---|---|")
    for shape in args.shape or ["1v1", "4v4"]:
        chosen = scenario_of(scenario(args.players, shape), f"bench-{shape}")
        players = build(chosen, Streams.of(chosen.seed).population)
        for pairing in ("quality", "random"):
            run = run_virtual(chosen, players, pairing)
            per_player = run.matches * chosen.mode.players_per_match / len(players)
            met = ("yes" if run.wall_seconds <= GOAL_SECONDS else "**no**") if pairing == "quality" else "–"
            speed = chosen.duration_seconds / run.wall_seconds
            print(
                f"| {shape} | {pairing} | {run.matches:,} | {per_player:.2f} | {run.wall_seconds:.1f} "
                f"| {speed:.0f} | {met} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
