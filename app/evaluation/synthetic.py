"""Synthetic team tournaments with known skills, shaped like seed 002 §4's data.

Players have skills ~ N(0, 1) and perform at skill + N(0, 1). A team of n <= 6 performs at
the mean of its players' performances times (0.88 + 0.02·n), the team function of seed 002
eq. 4, so undersized teams are handicapped but not by the sum's n/6. Each tournament has
100–1,000 teams of 1–6 players (mostly full) and 30–60 distinct scores: the performances
are cut at random quantiles into that many levels, which gives the large multiway ties of
a quiz where teams are ranked by the number of questions they solved.
"""

from __future__ import annotations

import random

import numpy as np

from app.evaluation.tournaments import Tournament

SIZE_WEIGHTS = (1, 1, 2, 3, 5, 12)  # team sizes 1..6, mostly full rosters


def tournaments(
    count: int,
    *,
    players: int = 5000,
    min_teams: int = 100,
    max_teams: int = 1000,
    levels: tuple[int, int] = (30, 60),
    seed: int = 0,
) -> list[Tournament]:
    rng = random.Random(seed)
    noise = np.random.default_rng(seed)
    skills = noise.normal(0.0, 1.0, players)
    out = []
    for number in range(count):
        team_count = rng.randint(min_teams, max_teams)
        sizes = rng.choices(range(1, 7), weights=SIZE_WEIGHTS, k=team_count)
        if sum(sizes) > players:
            raise ValueError(f"{players} players cannot fill {team_count} teams")
        chosen = rng.sample(range(players), sum(sizes))
        rosters: list[list[int]] = []
        start = 0
        for size in sizes:
            rosters.append(chosen[start : start + size])
            start += size
        performance = np.array(
            [
                float(np.mean(skills[r] + noise.normal(0.0, 1.0, len(r)))) * (0.88 + 0.02 * len(r))
                for r in rosters
            ]
        )
        distinct = rng.randint(*levels)
        cuts = np.sort(noise.choice(performance, size=distinct - 1, replace=False))
        score = np.searchsorted(cuts, performance, side="right")
        out.append(
            Tournament(
                f"synthetic:{number}",
                [[f"p{p}" for p in roster] for roster in rosters],
                [float(-s) for s in score],
            )
        )
    return out
