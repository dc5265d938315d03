"""The quality threshold as a wait goes on, and eq. 7 over many candidate matches at once."""

from __future__ import annotations

import random

import numpy as np
import pytest

from app.matchmaking.quality import Relaxation, team_quality
from app.rating import Rating, TrueSkill

ENV = TrueSkill()


def test_the_threshold_falls_linearly_from_start_to_floor_and_stays_there() -> None:
    relax = Relaxation(start=0.4, floor=0.05, seconds=10.0)
    assert relax.threshold(0.0) == 0.4
    assert relax.threshold(5.0) == pytest.approx(0.225, abs=1e-15)
    # At the end of the wait the floor itself, not the line's rounded end (0.04999999999999999).
    assert relax.threshold(10.0) == 0.05
    assert relax.threshold(1e6) == 0.05
    waited = np.array([0.0, 2.5, 5.0, 9.999, 10.0, 60.0])
    assert relax.thresholds(waited).tolist() == [relax.threshold(w) for w in waited.tolist()]


@pytest.mark.parametrize("seconds", [0.0, -1.0])
def test_no_relaxation_time_means_the_floor_at_once(seconds: float) -> None:
    relax = Relaxation(start=0.7, floor=0.1, seconds=seconds)
    assert relax.threshold(0.0) == 0.1
    waited = np.array([0.0, 3.0])
    assert relax.thresholds(waited).tolist() == [0.1, 0.1]


def test_team_quality_scores_each_candidate_of_a_batch_on_its_own() -> None:
    """Candidates along the first axis, teams along the last: each row's quality is eq. 7 of
    that row's teams alone, whatever the other rows hold."""
    rng = random.Random(11)
    beta2 = ENV.beta**2
    candidates = [
        [[Rating(rng.uniform(0, 50), rng.uniform(0.5, 8)) for _ in range(size)] for size in (1, 2, 3)]
        for _ in range(5)
    ]
    mu = np.array([[sum(r.mu for r in team) for team in teams] for teams in candidates])
    spread = np.array([[sum(r.sigma**2 + beta2 for r in team) for team in teams] for teams in candidates])
    players = np.array([[float(len(team)) for team in teams] for teams in candidates])
    batch = team_quality(mu, spread, players, beta2)
    assert batch.shape == (5,)
    for row, teams in enumerate(candidates):
        assert batch[row] == pytest.approx(ENV.quality(teams), rel=1e-12)


def test_a_relaxation_shorter_than_a_second_still_relaxes() -> None:
    relax = Relaxation(start=0.4, floor=0.05, seconds=0.5)
    assert relax.threshold(0.25) == pytest.approx(0.225, abs=1e-15)
    assert relax.thresholds(np.array([0.25])).tolist() == [relax.threshold(0.25)]
