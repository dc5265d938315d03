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
    mine, theirs = a.learning_curves(), b.learning_curves()
    # The same players, each with a curve: an empty history would compare nothing.
    assert mine and mine.keys() == theirs.keys()
    for name, curve in mine.items():
        assert curve and [t for t, _ in curve] == [t for t, _ in theirs[name]]
        assert all(close(x, y) for (_, x), (_, y) in zip(curve, theirs[name], strict=True)), name


def test_the_game_examples() -> None:
    def games(lib: Any) -> list[Any]:
        a1 = lib.Player(lib.Gaussian(mu=25.0, sigma=25.0 / 3), beta=25.0 / 6, gamma=25.0 / 300)
        a2, a3, a4, b1, b2 = (lib.Player() for _ in range(5))
        two = lib.Game([[a1, a2], [b1, b2]])
        three = lib.Game([[a1], [a2, a3], [a4]], [1, 0, 0], p_draw=0.25)
        return [two, three]

    for mine, theirs, sizes in zip(games(ours), games(peer), ([2, 2], [1, 2, 1]), strict=True):
        # A message and a posterior per player: empty lists would compare nothing.
        assert [len(team) for team in mine.likelihoods] == sizes
        assert [len(team) for team in mine.posteriors()] == sizes
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


def test_the_game_example_prints_the_readmes_numbers() -> None:
    """The README prints the two-team game's evidence (0.5) and the first player's posterior,
    Gaussian(mu=2.361, sigma=5.516), to three decimals."""
    a1, a2, a3, a4 = (ours.Player() for _ in range(4))
    game = ours.Game([[a1, a2], [a3, a4]])
    assert round(game.evidence, 3) == 0.5
    posterior = game.posteriors()[0][0]
    assert (round(posterior.mu, 3), round(posterior.sigma, 3)) == (2.361, 5.516)
    product = game.likelihoods[0][0] * a1.prior
    assert close(product, posterior)


def test_the_plotting_example() -> None:
    """The README's "solve your own example": untimed games among five agents, chosen at
    random (the README seeds nothing; seed 0 here), gamma 0.03, sigma 1, `convergence()`.
    The README plays 1,000 games; 200 here, as the package needs hundreds of its iterations
    to settle this history (243 to a 1e-6 step at 1,000 games), which at 1,000 games take
    minutes.
    The README draws pairs with `random.choices(agents, k=2)`, which pits an agent against
    itself one game in five; the package takes such a game (it narrows the agent's sigma on no
    information) and ours refuses it with a ValueError, so the pairs here are drawn without
    replacement. Ours with the default call against the package run to its fixed point (1e-6
    is the tolerance ours converges to by default; the package's default call stops on its
    step)."""
    import random

    rng = random.Random(0)
    agents = ["a", "b", "c", "d", "e"]
    composition = [[[x] for x in rng.sample(agents, k=2)] for _ in range(200)]
    with pytest.raises(ValueError, match="appears twice"):
        ours.History(composition=[[["a"], ["b"]], [["c"], ["c"]]], gamma=0.03, sigma=1.0)
    mine = ours.History(composition=composition, gamma=0.03, sigma=1.0)
    theirs = peer.History(composition=composition, gamma=0.03, sigma=1.0)
    curves_close(mine, theirs)  # the online pass, before any sweep
    mine.convergence()
    assert not mine.capped
    theirs.convergence(epsilon=1e-9, iterations=2000, verbose=False)
    curves_close(mine, theirs)
