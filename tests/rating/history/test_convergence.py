"""History.convergence against trueskillthroughtime 1.1.0 at the same call arguments.

epsilon bounds the distance to the fixed point (the largest |Δmu| or |Δsigma| over every
learning-curve point), and iterations caps sweeps. For any (epsilon, iterations), our curves
end no further from the fixed point than the larger of epsilon and the package's own
distance for the same arguments. The fixed point is our history run to a 1e-12 step; the
package runs with the exact math.erfc (as in test_oracle.py), and multi-team games are listed
best first (the package misorders other results, test_oracle.py).
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import trueskillthroughtime as peer

from app.rating.history import Gaussian, History, Player
from tests.rating.history import test_oracle

CALLS = [(1e-2, 2), (1e-3, 5), (1e-3, 8), (1e-5, 15), (1e-6, 30), (1e-9, 60), (0.0, 1), (1e-4, 200)]


def random_history(seed: int) -> dict[str, Any]:
    """2–4 teams of 1–3, ties when p_draw > 0, gamma 0–0.2, 10–60 games over a few times."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(4, 10))]
    p_draw = rng.choice([0.0, 0.15, 0.3])
    composition, results, times = [], [], []
    for _ in range(rng.randint(10, 60)):
        count = rng.randint(2, 4)
        sizes = [rng.randint(1, 3) for _ in range(count)]
        while sum(sizes) > len(names):
            sizes[sizes.index(max(sizes))] -= 1
        chosen = rng.sample(names, sum(sizes))
        teams, start = [], 0
        for size in sizes:
            teams.append(chosen[start : start + size])
            start += size
        if p_draw:
            scores = sorted((float(rng.randint(0, count - 1)) for _ in range(count)), reverse=True)
        else:
            scores = [float(count - 1 - t) for t in range(count)]
        composition.append(teams)
        results.append(scores)
        times.append(float(rng.randint(0, 12)))
    return {
        "composition": composition,
        "results": results,
        "times": times,
        "p_draw": p_draw,
        "gamma": rng.uniform(0.0, 0.2),
        "sigma": rng.uniform(1.0, 6.0),
    }


def build(spec: dict[str, Any], library: Any) -> Any:
    return library(
        spec["composition"],
        spec["results"],
        spec["times"],
        sigma=spec["sigma"],
        gamma=spec["gamma"],
        p_draw=spec["p_draw"],
    )


def distance(curves: dict[str, Any], fixed: dict[str, Any]) -> float:
    # The same players, each with a curve: empty curves would be at distance 0 from anything.
    assert fixed and curves.keys() == fixed.keys()
    assert all(curve and len(curve) == len(curves[name]) for name, curve in fixed.items())
    worst = 0.0
    for name, curve in fixed.items():
        for (_, a), (_, b) in zip(curve, curves[name], strict=True):
            worst = max(worst, abs(a.mu - b.mu), abs(a.sigma - b.sigma))
    return worst


@pytest.mark.parametrize("seed", range(15))
def test_never_further_from_the_fixed_point_than_the_package(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(peer, "erfc", math.erfc)
    spec = random_history(seed)
    reference = build(spec, History)
    reference.convergence(epsilon=1e-12, iterations=20_000)
    assert not reference.capped
    fixed = reference.learning_curves()
    for epsilon, iterations in CALLS:
        ours = build(spec, History)
        ours.convergence(epsilon, iterations)
        theirs = build(spec, peer.History)
        theirs.convergence(epsilon, iterations, verbose=False)
        mine, package = distance(ours.learning_curves(), fixed), distance(theirs.learning_curves(), fixed)
        # 1e-9: the package's float path (its own Gaussian algebra) against ours.
        assert mine <= max(epsilon, package) + 1e-9, (epsilon, iterations, mine, package)


def test_epsilon_bounds_the_distance_not_the_step() -> None:
    """A converged call is within epsilon of the fixed point, and says so; a capped one says
    it was capped."""
    spec = random_history(3)
    reference = build(spec, History)
    reference.convergence(epsilon=1e-12, iterations=20_000)
    for epsilon in (1e-3, 1e-6, 1e-9):
        ours = build(spec, History)
        ours.convergence(epsilon, 10_000)
        assert not ours.capped and ours.distance <= epsilon
        assert distance(ours.learning_curves(), reference.learning_curves()) <= epsilon
    capped = build(spec, History)
    _, done = capped.convergence(1e-9, 2)
    assert done == 2 and capped.capped


def test_the_package_return_shape() -> None:
    history = History(
        [[["a"], ["b"]], [["b"], ["c"]]], [[1, 0], [1, 0]], priors={"a": Player(Gaussian(1.0, 2.0))}
    )
    (mu_step, sigma_step), done = history.convergence()
    assert done >= 1 and 0.0 <= mu_step <= 1e-6 and 0.0 <= sigma_step <= 1e-6


@pytest.mark.parametrize("seed", [34, 90])
def test_sweeps_stop_at_rounding(seed: int) -> None:
    """Seeds 34 and 90 of test_oracle.py contract fast but unevenly: their steps reach
    float64's rounding before three step ratios agree, and the ratios of rounding never
    agree, so a step test that waited for them ran to the 3,000-sweep cap. A step at the
    rounding floor stops the call, within epsilon; so does a second call, which starts at
    the fixed point."""
    spec = test_oracle.random_history(seed)
    history = test_oracle.build(spec, History, Gaussian, Player)
    step, done = history.convergence(1e-10, 3000)
    assert done <= 60 and max(step) <= 1e-10
    assert not history.capped and history.distance <= 1e-10
    step, done = history.convergence(1e-10, 3000)
    assert done <= 10 and max(step) <= 1e-10
    assert not history.capped and history.distance <= 1e-10
    # Within epsilon of where plain sweeps go, run long past the rounding floor.
    reference = test_oracle.build(spec, History, Gaussian, Player)
    reference.convergence(0.0, 400, accelerate=False)
    assert distance(history.learning_curves(), reference.learning_curves()) <= 1e-10


def long_history(seed: int) -> dict[str, Any]:
    """1v1 games over many batches: a slow global mode, the case a step test misjudges."""
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(rng.randint(20, 80))]
    composition, results, times = [], [], []
    for batch in range(rng.randint(30, 120)):
        for _ in range(rng.randint(1, 8)):
            composition.append([[name] for name in rng.sample(names, 2)])
            results.append([1.0, 0.0])
            times.append(float(batch))
    return {
        "composition": composition,
        "results": results,
        "times": times,
        "p_draw": 0.0,
        "gamma": rng.uniform(0.0, 0.1),
        "sigma": rng.uniform(1.0, 6.0),
    }


@pytest.mark.parametrize("seed", [1, 3, 12, 16, 31])
def test_the_reported_distance_bounds_the_true_one(seed: int) -> None:
    """`distance` is at least the true distance to the fixed point wherever the call stops."""
    for spec in (long_history(seed), random_history(seed)):
        reference = build(spec, History)
        reference.convergence(epsilon=1e-12, iterations=20_000)
        assert not reference.capped
        fixed = reference.learning_curves()
        for epsilon in (1e-3, 1e-6, 1e-9):
            ours = build(spec, History)
            ours.convergence(epsilon, 1_000)
            assert not ours.capped and ours.distance <= epsilon
            assert distance(ours.learning_curves(), fixed) <= ours.distance, (seed, epsilon)
