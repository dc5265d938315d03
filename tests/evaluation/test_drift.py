"""fit-drift: the online evidence of the service's ratings with drift, and its fit."""

from __future__ import annotations

import math

import pytest

from app.evaluation import drift
from app.evaluation.histories import MatchHistory
from app.rating import Rating, TrueSkill

SIGMA = 25.0 / 3.0


def test_each_games_evidence_is_the_probability_the_drifted_ratings_gave_it() -> None:
    data = MatchHistory(
        "tiny", [[["a"], ["b"]], [["a"], ["b"]], [["b"], ["a"]]], [[1, 0], [1, 0], [1, 0]], [0, 10, 30]
    )
    gamma = 0.4
    env = TrueSkill(25.0, SIGMA, SIGMA / 2, SIGMA / 100, 0.0)
    a, b = Rating(25.0, SIGMA), Rating(25.0, SIGMA)
    expected, last = [], 0.0
    for (first, _), time in zip(data.composition, data.times, strict=True):
        days = time - last
        a = Rating(a.mu, math.sqrt(a.sigma**2 + gamma**2 * days))
        b = Rating(b.mu, math.sqrt(b.sigma**2 + gamma**2 * days))
        winner, loser = (a, b) if first == ["a"] else (b, a)
        # With no draws, P(winner first) = Φ(Δ/c), the dynamics' tau² in each variance (seed 000 §4.2).
        widened = [(Rating(r.mu, math.hypot(r.sigma, env.tau)),) for r in (winner, loser)]
        expected.append(math.log(env.win_probability(widened)[0]))
        (won,), (lost,) = env.rate([(winner,), (loser,)])
        a, b = (won, lost) if first == ["a"] else (lost, won)
        last = time
    assert drift.log_evidence(data, gamma).tolist() == pytest.approx(expected, rel=1e-9)


def test_the_fit_finds_the_drift_of_skills_that_move() -> None:
    # Two players whose skills swap every 50 days: evidence rewards forgetting.
    games, results, times = [], [], []
    for day in range(0, 1000, 2):
        ahead = "a" if (day // 50) % 2 == 0 else "b"
        behind = "b" if ahead == "a" else "a"
        games.append([[ahead], [behind]])
        results.append([1.0, 0.0])
        times.append(float(day))
    data = MatchHistory("swap", games, results, times)
    shares: list[float] = []
    best, trials = drift.fit(data, rounds=12, progress=shares.append)
    assert len(shares) == len(trials) and shares == sorted(shares) and shares[-1] <= 1.0
    assert best.train > drift.evidence(data, 0.0).train + 0.05
    assert best.gamma > 0.1
    assert len(trials) >= 12
