"""History beyond the package's own vectors: add_events, extra skill components, robustness."""

from __future__ import annotations

import math
import random

import pytest

from app.rating.history import Gaussian, History, Player


def games(
    seed: int, count: int, players: int = 8
) -> tuple[list[list[list[str]]], list[list[float]], list[float]]:
    rng = random.Random(seed)
    names = [f"p{i}" for i in range(players)]
    composition, results, times = [], [], []
    for g in range(count):
        a, b = rng.sample(names, 2)
        composition.append([[a], [b]])
        results.append([1.0, 0.0] if rng.random() < 0.6 else [0.0, 1.0])
        times.append(float(g // 3))
    return composition, results, times


def curves_close(a: History, b: History, tolerance: float) -> None:
    ca, cb = a.learning_curves(), b.learning_curves()
    assert ca.keys() == cb.keys()
    for name in ca:
        assert [t for t, _ in ca[name]] == [t for t, _ in cb[name]]
        for (_, x), (_, y) in zip(ca[name], cb[name], strict=True):
            assert abs(x.mu - y.mu) < tolerance and abs(x.sigma - y.sigma) < tolerance


@pytest.mark.parametrize("split", [12, 13, 14])
def test_add_events_gives_the_history_built_at_once(split: int) -> None:
    """Split inside a batch (13, 14) or at its edge (12): the online estimates are the same
    as the constructor's, and a history smoothed before it grew converges to the same one."""
    composition, results, times = games(1, 30)
    whole = History(composition, results, times, gamma=0.1)
    online = History(composition[:split], results[:split], times[:split], gamma=0.1)
    online.add_events(composition[split:], results[split:], times[split:])
    assert len(online) == 30 and len(online.batches) == len(whole.batches)
    curves_close(whole, online, 1e-12)
    smoothed = History(composition[:split], results[:split], times[:split], gamma=0.1)
    smoothed.convergence(iterations=5)
    smoothed.add_events(composition[split:], results[split:], times[split:])
    # Both reach the same fixed point (slowly: about 400 sweeps to 1e-12 here).
    whole.convergence(epsilon=1e-12, iterations=2000)
    smoothed.convergence(epsilon=1e-12, iterations=2000)
    curves_close(whole, smoothed, 1e-9)


def test_add_events_refuses_the_past_and_mixed_timing() -> None:
    composition, results, times = games(2, 9)
    history = History(composition, results, times)
    with pytest.raises(ValueError, match="must not precede the last batch"):
        history.add_events([[["p0"], ["p1"]]], [[1, 0]], [0.0])
    with pytest.raises(ValueError, match="give times for every batch"):
        history.add_events([[["p0"], ["p1"]]], [[1, 0]])


def test_untimed_histories_grow_one_batch_per_game() -> None:
    composition, results, _ = games(3, 10)
    history = History(composition[:6], results[:6])
    history.add_events(composition[6:], results[6:])
    assert [b.time for b in history.batches] == [float(t) for t in range(1, 11)]


def test_a_zero_beta_component_adds_skill_without_noise() -> None:
    """Seed 001 Code 13: an extra skill component with beta = 0 (e.g. a surface skill)
    joins the player's team; it carries skill but no performance noise of its own."""
    priors = {"a_clay": Player(Gaussian(0.0, 1.0), beta=0.0, gamma=0.01)}
    composition = [[["a", "a_clay"], ["b"]], [["a", "a_clay"], ["c"]], [["b"], ["a"]]]
    history = History(composition, [[1, 0], [1, 0], [1, 0]], priors=priors, gamma=0.0)
    history.convergence()
    curves = history.learning_curves()
    assert curves["a_clay"][-1][1].mu > 0.0
    assert all(math.isfinite(g.mu) and g.sigma > 0 for c in curves.values() for _, g in c)


def test_extreme_upsets_keep_everything_finite() -> None:
    priors = {"strong": Player(Gaussian(60.0, 0.5), 1.0, 0.0), "weak": Player(Gaussian(0.0, 0.5), 1.0, 0.0)}
    composition = [[["weak"], ["strong"]], [["weak"], ["strong"]]]
    history = History(composition, [[1, 0], [0, 0]], priors=priors, p_draw=0.2)
    history.convergence()
    assert math.isfinite(history.log_evidence())
    for curve in history.learning_curves().values():
        for _, g in curve:
            assert math.isfinite(g.mu) and 0.0 < g.sigma < 1.0


def test_a_draw_probability_just_below_one_still_smooths() -> None:
    from app.rating.normal import draw_margin

    assert math.isfinite(draw_margin(0.9999999999999999, 1.0)) and draw_margin(0.9999999999999999, 1.0) > 8


def test_the_compiled_kernel_equals_game_on_every_two_team_game() -> None:
    """The kernel's closed form for two teams (weights, ties, beta per player) against Game,
    the scalar path it hands other games to: the same sweeps from the same start agree to
    rounding when every game goes through Game instead."""
    rng = random.Random(5)
    names = [f"p{i}" for i in range(10)]
    composition, results, times, weights = [], [], [], []
    for g in range(80):
        chosen = rng.sample(names, 2 if g % 3 else 4)
        half = len(chosen) // 2
        composition.append([chosen[:half], chosen[half:]])
        results.append(rng.choice([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]))
        times.append(float(g // 4))
        weights.append([[rng.choice([1.0, 0.5]) for _ in team] for team in composition[-1]])
    priors = {"p0": Player(Gaussian(1.0, 2.0), beta=0.5, gamma=0.1)}
    kwargs = {"priors": priors, "p_draw": 0.25, "gamma": 0.05, "weights": weights}
    compiled = History(composition, results, times, **kwargs)
    scalar = History(composition, results, times, **kwargs)
    scalar._flat.general[:] = True  # every game handed to Game, in its turn
    for _ in range(6):
        compiled.iteration()
        scalar.iteration()
    curves_close(compiled, scalar, 1e-12)
    assert compiled.log_evidence() == pytest.approx(scalar.log_evidence(), rel=1e-12)


def test_a_draw_only_the_decimal_integration_resolves_goes_through_game() -> None:
    """A draw 8 standard deviations out with a window 2.2 wide (truncation._far_window, not
    compiled): the kernel hands the game to Game, and the history equals Game's throughout."""
    priors = {"a": Player(Gaussian(16.0, 1.0)), "b": Player(Gaussian(0.0, 1.0))}
    composition = [[["a"], ["b"]], [["b"], ["c"]], [["c"], ["a"]]]
    results = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    compiled = History(composition, results, priors=priors, p_draw=0.998, gamma=0.0)
    scalar = History(composition, results, priors=priors, p_draw=0.998, gamma=0.0)
    scalar._flat.general[:] = True
    for _ in range(4):
        compiled.iteration()
        scalar.iteration()
    curves_close(compiled, scalar, 1e-12)
    assert math.isfinite(compiled.log_evidence())


def test_weighted_histories_match_the_peer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Partial play: the array path for two teams with weights, and Game for three teams,
    against trueskillthroughtime 1.1.0 (online pass, then both converged), the peer with the
    exact erfc as in test_oracle.py."""
    import trueskillthroughtime as peer

    monkeypatch.setattr(peer, "erfc", math.erfc)
    rng = random.Random(11)
    names = [f"p{i}" for i in range(9)]
    composition, results, times, weights = [], [], [], []
    for g in range(40):
        chosen = rng.sample(names, 4 if g % 4 else 5)
        teams = [chosen[:2], chosen[2:4]] + ([chosen[4:]] if len(chosen) == 5 else [])
        composition.append(teams)
        # Listed best first: the peer misorders other results of three teams (test_oracle.py).
        results.append([float(len(teams) - 1 - t) for t in range(len(teams))])
        weights.append([[rng.choice([1.0, 0.5, 0.8]) for _ in team] for team in teams])
        times.append(float(g // 4))
    ours = History(composition, results, times, gamma=0.05, weights=weights)
    theirs = peer.History(composition, results, times, gamma=0.05, weights=weights)

    def assert_same_curves() -> None:
        mine, other = ours.learning_curves(), theirs.learning_curves()
        assert mine and mine.keys() == other.keys()  # empty curves would compare nothing
        for name, curve in mine.items():
            assert len(curve) == len(other[name]) > 0
            for (_, a), (_, b) in zip(curve, other[name], strict=True):
                assert abs(a.mu - b.mu) < 1e-6 and abs(a.sigma - b.sigma) < 1e-6

    assert_same_curves()
    ours.convergence(epsilon=1e-10, iterations=3000)
    theirs.convergence(epsilon=1e-10, iterations=3000, verbose=False)
    assert_same_curves()


def test_prior_is_the_last_posterior_drifted_to_the_time_asked() -> None:
    composition, results, times = games(6, 12)
    history = History(composition, results, times, gamma=0.2)
    history.convergence(iterations=5)
    name = composition[-1][0][0]
    last_time, last = history.learning_curves()[name][-1]
    later = history.prior(name, last_time + 4.0)
    assert later.mu == last.mu
    assert later.sigma == pytest.approx(math.sqrt(last.sigma**2 + 4.0 * 0.2**2))
    assert history.prior("nobody") == Gaussian(0.0, 6.0)
    with pytest.raises(ValueError, match="precedes"):
        history.prior(name, last_time - 1.0)
