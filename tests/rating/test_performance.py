"""Seed 002 §2: team-performance functions other than TrueSkill's sum."""

from __future__ import annotations

import pytest

from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.performance import PerformanceModel

R = Rating(25.0, 5.0)


def test_sum_is_trueskill() -> None:
    groups = [(R, Rating(30.0, 4.0)), (Rating(20.0, 6.0),), (R,)]
    assert TrueSkill(team_performance="sum").rate(groups, [1, 0, 2]) == TrueSkill().rate(groups, [1, 0, 2])


def test_mean_makes_an_undersized_team_an_even_match() -> None:
    """Under the sum a pair beats an equal single player almost surely; under the mean it is even."""
    groups = [(R, R), (R,)]
    assert TrueSkill().win_probability(groups)[0] > 0.9
    assert TrueSkill(team_performance="mean").win_probability(groups) == pytest.approx([0.5, 0.5], abs=1e-12)
    assert TrueSkill(team_performance="mean").quality([(R, R), (R, R)]) == pytest.approx(
        TrueSkill().quality([(R, R), (R, R)]), rel=1e-12
    ), "quality is scale-free, so equal sizes agree"


def test_size_penalised_mean_coefficients_follow_eq_4() -> None:
    model = PerformanceModel("size-penalised-mean")
    team = [Rating(float(mu), 5.0) for mu in (30, 28, 26, 24, 22, 20, 18, 16)]
    for n in range(1, 7):
        (alphas,) = model.coefficients([team[:n]], [[1.0] * n], None)
        assert alphas == pytest.approx([(0.88 + 0.02 * n) / n] * n)
    (alphas,) = model.coefficients([team], [[1.0] * 8], None)
    top_mean = sum((30, 28, 26, 24, 22, 20)) / 6
    assert alphas == pytest.approx([top_mean / sum(range(16, 31, 2))] * 8)
    assert all(a > 0 for a in alphas), "substitutes keep a non-zero coefficient"
    # At the team's prior means the performance is its top six's mean.
    assert sum(a * r.mu for a, r in zip(alphas, team, strict=True)) == pytest.approx(top_mean)


def test_size_penalty_is_configurable() -> None:
    model = PerformanceModel("size-penalised-mean", c0=0.5, c1=0.1, roster_cap=3)
    (alphas,) = model.coefficients([[R, R]], [[1.0, 0.5]], None)
    assert alphas == pytest.approx([0.7 / 2, 0.7 / 2 * 0.5]), "partial play scales the coefficient"
    (alphas,) = model.coefficients([[R] * 5], [[1.0] * 5], None)
    assert alphas == pytest.approx([0.8 / 5] * 5), "equal means: the top 3's mean, times c0 + c1·N"


def test_undersized_winners_gain_less_than_under_the_sum() -> None:
    """The reason for eq. 4: a short-handed team that wins is not over-rewarded."""
    groups = [(R, R, R), (R, R, R, R, R, R)]
    gain = {
        kind: TrueSkill(team_performance=kind).rate(groups)[0][0].mu - R.mu
        for kind in ("sum", "size-penalised-mean")
    }
    assert 0 < gain["size-penalised-mean"] < gain["sum"]


def test_weighted_coefficients_shift_the_update_to_the_heavier_player() -> None:
    env = TrueSkill(team_performance="weighted")
    groups = [(R, R), (Rating(25.0, 5.0),)]
    (a, b), _ = env.rate(groups, coefficients=[[3.0, 1.0], [1.0]])
    assert a.mu - R.mu > b.mu - R.mu > 0
    keyed = env.rate([{"x": R, "y": R}, {"z": R}], coefficients={(0, "x"): 3.0})
    assert keyed[0]["x"] == env.rate([(R, R), (R,)], coefficients=[[3.0, 1.0], [1.0]])[0][0]


def test_weighted_without_coefficients_is_the_sum() -> None:
    groups = [(R, Rating(28.0, 3.0)), (Rating(20.0, 6.0),)]
    assert TrueSkill(team_performance="weighted").rate(groups) == TrueSkill().rate(groups, ranks=[0, 1])


def test_tie_layer_with_size_penalised_mean() -> None:
    env = TrueSkill(team_performance="size-penalised-mean", tie_model="tie-layer", draw_probability=0.2)
    groups = [tuple(R for _ in range(n)) for n in (6, 3, 7, 2)]
    out = env.rate(groups, [0, 1, 1, 2])
    assert out[0][0].mu > R.mu > out[3][0].mu
    assert all(r.sigma < R.sigma + 0.1 for team in out for r in team)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"team_performance": "median"}, "team_performance must be one of sum, mean, weighted"),
        ({"team_performance": "size-penalised-mean", "c0": -1.0}, "c0 \\+ c1·n must be positive"),
        ({"team_performance": "size-penalised-mean", "roster_cap": 0}, "roster_cap must be at least 1"),
    ],
)
def test_bad_models_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(RatingInputError, match=message):
        TrueSkill(**kwargs)  # type: ignore[arg-type]


def test_bad_coefficients_are_refused() -> None:
    with pytest.raises(RatingInputError, match="only used with team_performance='weighted'"):
        TrueSkill().rate([(R,), (R,)], coefficients=[[2.0], [1.0]])
    weighted = TrueSkill(team_performance="weighted")
    with pytest.raises(RatingInputError, match=r"coefficient of team 1 player 0 must be in \(0, 1e\+06\]"):
        weighted.rate([(R,), (R,)], coefficients=[[2.0], [0.0]])
    with pytest.raises(RatingInputError, match="coefficients of team 0 have 2 entries for 1 players"):
        weighted.rate([(R,), (R,)], coefficients=[[2.0, 1.0], [1.0]])
