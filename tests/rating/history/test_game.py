"""Seed 001's worked numbers for a single game, and robustness where the peer divides by zero."""

from __future__ import annotations

import math

import pytest

from app.rating.history import Game, Gaussian, Player


def four_players() -> list[Player]:
    """Seed 001 Code 2."""
    return [Player(Gaussian(0.0, 6.0), 1.0, 0.03), Player(), Player(), Player()]


def test_code_4_and_5_two_teams_of_two() -> None:
    a1, a2, a3, a4 = four_players()
    game = Game([[a1, a2], [a3, a4]])
    assert round(game.evidence, 3) == 0.5
    posterior = game.posteriors()[0][0]
    assert (round(posterior.mu, 3), round(posterior.sigma, 3)) == (2.361, 5.516)
    manual = game.likelihoods[0][0] * a1.prior
    assert manual.mu == pytest.approx(posterior.mu, abs=1e-12)


def test_code_23_with_draws_possible() -> None:
    a1, a2, a3, a4 = four_players()
    posterior = Game([[a1, a2], [a3, a4]], p_draw=0.25).posteriors()[0][0]
    assert (round(posterior.mu, 3), round(posterior.sigma, 3)) == (2.461, 5.507)


def test_code_6_three_teams_with_a_tie() -> None:
    a1, a2, a3, a4 = four_players()
    game = Game([[a1], [a2, a3], [a4]], [1.0, 0.0, 0.0], p_draw=0.25)
    (winner,), (b, c), (d,) = game.posteriors()
    assert winner.mu > 0 > d.mu and b.mu < 0
    assert b.mu == pytest.approx(c.mu, abs=1e-12)
    assert 0 < game.evidence < 1


@pytest.mark.parametrize("gap", [20.0, 60.0, 200.0])
@pytest.mark.parametrize("tie", [False, True])
def test_extreme_upsets_and_draws_stay_finite(gap: float, tie: bool) -> None:
    """The peer's closed form divides by zero here (1 − W rounds to 0, or the evidence to 0)."""
    strong = Player(Gaussian(gap, 1.0), 1.0, 0.0)
    weak = Player(Gaussian(0.0, 1.0), 1.0, 0.0)
    game = Game([[weak], [strong]], [1.0, 1.0] if tie else [1.0, 0.0], p_draw=0.1 if tie else 0.0)
    for team in game.posteriors():
        for posterior in team:
            assert math.isfinite(posterior.mu) and 0.0 < posterior.sigma < 1.0
    (weak_after,), (strong_after,) = game.posteriors()
    assert weak_after.mu > 0.0 and strong_after.mu < gap
    assert 0.0 <= game.evidence < 1e-10


def test_bad_games_raise_value_errors() -> None:
    with pytest.raises(ValueError, match="at least 2 teams"):
        Game([[Player()]])
    with pytest.raises(ValueError, match="result has 3 entries for 2 teams"):
        Game([[Player()], [Player()]], [1, 0, 2])
    with pytest.raises(ValueError, match="a draw needs p_draw > 0"):
        Game([[Player()], [Player()]], [1, 1])
    with pytest.raises(ValueError, match=r"p_draw must be in \[0, 1\)"):
        Game([[Player()], [Player()]], p_draw=1.0)


@pytest.mark.parametrize("tie", [False, True])
def test_log_evidence_of_an_impossible_looking_result_is_finite(tie: bool) -> None:
    strong = Player(Gaussian(400.0, 1.0), 1.0, 0.0)
    weak = Player(Gaussian(0.0, 1.0), 1.0, 0.0)
    game = Game([[weak], [strong]], [1.0, 1.0] if tie else [1.0, 0.0], p_draw=0.1)
    assert game.evidence == 0.0
    assert -1e6 < game.log_evidence < -1e4


@pytest.mark.parametrize(("result", "p_draw"), [([1.0, 0.0], 0.0), ([1.0, 1.0], 0.3), ([0.0, 1.0], 0.2)])
def test_log_evidence_is_the_log_of_the_evidence(result: list[float], p_draw: float) -> None:
    game = Game([[Player(Gaussian(1.0, 2.0))], [Player(Gaussian(-0.5, 3.0))]], result, p_draw)
    assert game.log_evidence == pytest.approx(math.log(game.evidence), rel=1e-12)
    three = Game([[Player()], [Player()], [Player(Gaussian(2.0, 1.0))]], [2.0, 1.0, 1.0], 0.25)
    assert three.log_evidence == pytest.approx(math.log(three.evidence), rel=1e-12)


def test_the_package_public_names_and_call_shapes() -> None:
    """trueskillthroughtime 1.1.0's constants, forget(gamma, t=...) and prior_draw."""
    import trueskillthroughtime as peer

    import app.rating.history as ours

    for name in ("MU", "SIGMA", "BETA", "GAMMA", "P_DRAW", "EPSILON", "ITERATIONS", "inf"):
        assert getattr(ours, name) == getattr(peer, name), name
    assert Gaussian(1.0, 2.0).forget(0.5, t=4).sigma == pytest.approx(math.sqrt(4.0 + 4 * 0.25))
    assert Player(prior_draw=Gaussian(0.0, 1.0)).prior_draw == Gaussian(0.0, 1.0)


def test_a_negative_weight_plays_for_the_other_side() -> None:
    """Weight −1 turns b's skill against b's own team: a's win is as much b's, so both move
    up by the same, as the package's runtest expects."""
    a, b = Player(Gaussian(2.0, 6.0), 1.0, 0.0), Player(Gaussian(2.0, 6.0), 1.0, 0.0)
    [pa], [pb] = Game([[a], [b]], weights=[[1.0], [-1.0]]).posteriors()
    assert pa.mu > 2.0 and pa.isapprox(pb, 1e-9)


def test_a_certain_result_sends_the_flat_message() -> None:
    """A win the priors make certain (the truncation's w below 2⁻⁵²) leaves the skills
    exactly where they were: the message is N(0, inf), as the package's."""
    g = Game([[Player(Gaussian(1.139, 0.531), 1.0)], [Player(Gaussian(15.568, 0.51), 1.0)]], [0, 1])
    assert g.likelihoods[0][0].sigma == math.inf and g.likelihoods[0][0].mu == 0.0
    assert g.likelihoods[1][0].sigma == math.inf
