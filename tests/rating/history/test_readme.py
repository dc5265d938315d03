"""The examples of trueskillthroughtime 1.1.0's README, ours against the package's numbers
(the package with the exact math.erfc in place of its approximation, as in test_oracle.py),
each called as the README calls it: within 1e-6."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import trueskillthroughtime as peer

import app.rating.history as ours


@pytest.fixture(autouse=True)
def exact_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peer, "erfc", math.erfc)


def close(a: Any, b: Any) -> bool:
    return abs(a.mu - b.mu) < 1e-6 and abs(a.sigma - b.sigma) < 1e-6


def curves_close(a: Any, b: Any) -> None:
    theirs = b.learning_curves()
    for name, curve in a.learning_curves().items():
        assert [t for t, _ in curve] == [t for t, _ in theirs[name]]
        assert all(close(x, y) for (_, x), (_, y) in zip(curve, theirs[name], strict=True)), name


def test_the_game_examples() -> None:
    def games(lib: Any) -> list[Any]:
        a1 = lib.Player(lib.Gaussian(mu=25.0, sigma=25.0 / 3), beta=25.0 / 6, gamma=25.0 / 300)
        a2, a3, a4, b1, b2 = (lib.Player() for _ in range(5))
        two = lib.Game([[a1, a2], [b1, b2]])
        three = lib.Game([[a1], [a2, a3], [a4]], [1, 0, 0], p_draw=0.25)
        return [two, three]

    for mine, theirs in zip(games(ours), games(peer), strict=True):
        assert mine.evidence == pytest.approx(theirs.evidence, abs=1e-6)
        for lk_a, lk_b in zip(mine.likelihoods, theirs.likelihoods, strict=True):
            assert all(close(x, y) for x, y in zip(lk_a, lk_b, strict=True))
        for post_a, post_b in zip(mine.posteriors(), theirs.posteriors(), strict=True):
            assert all(close(x, y) for x, y in zip(post_a, post_b, strict=True))


def test_the_three_player_cycle() -> None:
    def cycle(lib: Any) -> Any:
        return lib.History([[["a"], ["b"]], [["b"], ["c"]], [["c"], ["a"]]], gamma=0.0)

    mine, theirs = cycle(ours), cycle(peer)
    curves_close(mine, theirs)
    mine.convergence()
    theirs.convergence(verbose=False)
    curves_close(mine, theirs)


def test_the_skill_evolution_example() -> None:
    def evolution(lib: Any) -> Any:
        rng = np.random.RandomState(99)  # the README's numpy.random.seed(99)
        count = 1000

        def skill(experience: int, middle: int, maximum: float, slope: float) -> float:
            return maximum / (1 + math.exp(slope * (-experience + middle)))

        target = [skill(i, 500, 2, 0.0075) for i in range(count)]
        opponents = rng.normal(target, scale=0.5)
        composition = [[["a"], [str(i)]] for i in range(count)]
        results = [
            [1, 0] if rng.normal(target[i]) > rng.normal(opponents[i]) else [0, 1] for i in range(count)
        ]
        priors = {str(i): lib.Player(lib.Gaussian(float(opponents[i]), 0.2)) for i in range(count)}
        return lib.History(composition, results, list(range(count)), priors, gamma=0.015)

    mine, theirs = evolution(ours), evolution(peer)
    curves_close(mine, theirs)
    mine.convergence()
    theirs.convergence(verbose=False)
    curves_close(mine, theirs)
