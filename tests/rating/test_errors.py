"""Bad input raises RatingInputError (a ValueError) whose message names the problem."""

from __future__ import annotations

import math

import pytest

from app.rating import Rating, RatingInputError, TrueSkill

ENV = TrueSkill()
R = Rating()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ENV.rate([(R,)]), "at least 2 teams"),
        (lambda: ENV.rate([]), "at least 2 teams"),
        (lambda: ENV.rate([(R,), ()]), "team 1 is empty"),
        (lambda: ENV.rate([{"a": R}, {"a": R}]), "'a' appears twice"),
        (lambda: ENV.rate([{"a": R}, (R,)]), "not a mix"),
        (lambda: ENV.rate([(R,), (R,)], ranks=[0]), "ranks has 1 entries for 2 teams"),
        (lambda: ENV.rate([(R,), (R,)], ranks=[0, math.nan]), "ranks must be finite"),
        (lambda: ENV.rate([(R,), (R,)], ranks=[0, 1], scores=[1, 0]), "ranks or scores, not both"),
        (lambda: ENV.rate([(R,), (R,)], scores=[1, 2, 3]), "scores has 3 entries"),
        (lambda: ENV.rate([(R,), (R,)], weights=[[1]]), "one entry per team"),
        (lambda: ENV.rate([(R,), (R,)], weights=[[1], [1, 1]]), "weights of team 1 have 2 entries"),
        (lambda: ENV.rate([(R,), (R,)], weights=[[1.5], [1]]), "must be in [0, 1]"),
        (lambda: ENV.rate([(R,), (R,)], weights=[[math.nan], [1]]), "must be in [0, 1]"),
        (lambda: ENV.rate([(R,), (R,)], weights=[[0], [1]]), "team 0 has no player with a positive weight"),
        (lambda: ENV.rate([(R,), ("x",)]), "not a Rating"),
        (lambda: Rating(math.inf, 1), "mu must be finite"),
        (lambda: Rating(math.nan, 1), "mu must be finite"),
        (lambda: Rating(25, 0), "sigma must be positive"),
        (lambda: Rating(25, -1), "sigma must be positive"),
        (lambda: TrueSkill(draw_probability=1.0), "draw_probability must be in [0, 1)"),
        (lambda: TrueSkill(draw_probability=-0.1), "draw_probability must be in [0, 1)"),
        (lambda: TrueSkill(beta=0), "beta must be positive"),
        (lambda: TrueSkill(draw_probability=0.0).rate([(R,), (R,)], ranks=[0, 0]), "draw_probability is 0"),
        # Three teams go through the chain, whose tie factors need a positive margin too.
        (
            lambda: TrueSkill(draw_probability=0.0).rate([(R,), (R,), (R,)], ranks=[0, 1, 1]),
            "draw_probability is 0",
        ),
        (lambda: ENV.draw_probability_of([(R,), (R,), (R,)]), "defined for 2 teams"),
    ],
)
def test_bad_input_is_named(call: object, message: str) -> None:
    with pytest.raises(RatingInputError) as caught:
        call()  # type: ignore[operator]
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_structures_come_back_as_given() -> None:
    teams = [{"alice": R, "bob": R}, {"carol": R}]
    result = ENV.rate(teams, weights={(0, "bob"): 0.5})
    assert [list(t) for t in result] == [["alice", "bob"], ["carol"]]
    plain = ENV.rate([[R, R], [R]])
    assert [len(t) for t in plain] == [2, 1]
    assert isinstance(plain[0], tuple)


def test_scores_are_ranks_reversed() -> None:
    teams = [(Rating(20, 5),), (Rating(30, 5),), (Rating(25, 5),)]
    by_scores = ENV.rate(teams, scores=[10, 30, 10])
    by_ranks = ENV.rate(teams, ranks=[1, 0, 1])
    assert by_scores == by_ranks


def test_zero_weight_is_not_playing() -> None:
    (a,), (b, c) = ENV.rate([(R,), (R, R)], weights=[[1], [0, 1]])
    assert b.mu == R.mu
    assert b.sigma == pytest.approx(math.hypot(R.sigma, ENV.tau))
    assert a.mu > R.mu and c.mu < R.mu
