"""Seed 002 §3: the tie layer, against the failure of TrueSkill's chain it was built to fix."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.tie_layer import places_of


def upset_then_ties(
    tied: int, gap: float = 20.0, sigma: float = 3.0
) -> tuple[list[tuple[Rating]], list[int]]:
    """An underdog wins, `tied` average teams share second place, a favourite comes last."""
    groups = [(Rating(25.0 - gap, sigma),)]
    groups += [(Rating(25.0, sigma),) for _ in range(tied)]
    groups.append((Rating(25.0 + gap, sigma),))
    return groups, [0] + [1] * tied + [2]


def test_chain_puts_a_lower_placed_team_above_a_higher_placed_one() -> None:
    """Seed 002 §2: after an underdog win and a long chain of ties, the chain leaves the
    last team's performance above a team placed before it; the tie layer does not."""
    groups, ranks = upset_then_ties(20)
    chain = TrueSkill(draw_probability=0.3).performance_posteriors(groups, ranks)
    layer = TrueSkill(draw_probability=0.3, tie_model="tie-layer").performance_posteriors(groups, ranks)

    tied_chain = [g.mu for g in chain[1:-1]]
    assert chain[-1].mu > min(tied_chain), "the chain's failure did not reproduce"
    assert chain[0].mu < max(tied_chain)

    tied_layer = [g.mu for g in layer[1:-1]]
    assert layer[0].mu > max(tied_layer)
    assert layer[-1].mu < min(tied_layer)


@pytest.mark.parametrize("draw_probability", [0.1, 0.3, 0.6])
@pytest.mark.parametrize("tied", [2, 5, 20, 60])
@pytest.mark.parametrize("gap", [0.0, 10.0, 40.0])
@pytest.mark.parametrize("sigma", [1.0, 3.0, 8.0])
def test_tie_layer_keeps_places_in_order(
    draw_probability: float, tied: int, gap: float, sigma: float
) -> None:
    groups, ranks = upset_then_ties(tied, gap, sigma)
    posts = TrueSkill(draw_probability=draw_probability, tie_model="tie-layer").performance_posteriors(
        groups, ranks
    )
    middle = [g.mu for g in posts[1:-1]]
    assert posts[0].mu > max(middle) and min(middle) > posts[-1].mu


def test_tied_teams_with_equal_priors_end_equal() -> None:
    """The chain gives identical tied teams different posteriors by listed position; the
    layer treats every team of a place alike."""
    groups, ranks = upset_then_ties(12)
    chain = TrueSkill(draw_probability=0.2).rate(groups, ranks)
    layer = TrueSkill(draw_probability=0.2, tie_model="tie-layer").rate(groups, ranks)
    chain_mus = [team[0].mu for team in chain[1:-1]]
    layer_mus = [team[0].mu for team in layer[1:-1]]
    assert max(chain_mus) - min(chain_mus) > 0.1
    assert max(layer_mus) - min(layer_mus) < 1e-9


mus = st.floats(0, 50)
sigmas = st.floats(0.5, 10)
teams = st.lists(st.lists(st.builds(Rating, mus, sigmas), min_size=1, max_size=4), min_size=2, max_size=9)


@settings(max_examples=80, deadline=None)
@given(teams=teams, data=st.data())
def test_listed_order_does_not_matter(teams: list[list[Rating]], data: st.DataObject) -> None:
    """Any permutation of the teams permutes the result, ties included (seed 002 has no
    chain whose order could matter)."""
    ranks = data.draw(st.lists(st.integers(0, 3), min_size=len(teams), max_size=len(teams)))
    order = data.draw(st.permutations(range(len(teams))))
    env = TrueSkill(draw_probability=0.25, tie_model="tie-layer", tolerance=1e-12)
    before = env.rate(teams, ranks)
    after = env.rate([teams[i] for i in order], [ranks[i] for i in order])
    for position, team in enumerate(order):
        for a, b in zip(after[position], before[team], strict=True):
            assert a.mu == pytest.approx(b.mu, abs=1e-7)
            assert a.sigma == pytest.approx(b.sigma, abs=1e-7)


@settings(max_examples=80, deadline=None)
@given(teams=teams, data=st.data())
def test_places_order_the_performances(teams: list[list[Rating]], data: st.DataObject) -> None:
    ranks = data.draw(st.lists(st.integers(0, 3), min_size=len(teams), max_size=len(teams)))
    env = TrueSkill(draw_probability=0.25, tie_model="tie-layer")
    posts = env.performance_posteriors(teams, ranks)
    places = places_of([float(r) for r in ranks])
    for better, worse in itertools.pairwise(places):
        assert min(posts[j].mu for j in better) > max(posts[j].mu for j in worse)
    for team in env.rate(teams, ranks):
        for rating in team:
            assert math.isfinite(rating.mu) and 0.0 < rating.sigma < 10.01


def test_two_teams_stay_close_to_trueskill() -> None:
    """With two single players the layer's 2·eps is TrueSkill's margin: similar updates."""
    a, b = Rating(27.0, 6.0), Rating(24.0, 7.0)
    for ranks in ([0, 1], [1, 0], [0, 0]):
        classic = TrueSkill().rate([(a,), (b,)], ranks)
        layer = TrueSkill(tie_model="tie-layer").rate([(a,), (b,)], ranks)
        for x, y in zip(classic, layer, strict=True):
            assert x[0].mu == pytest.approx(y[0].mu, abs=0.3)
            assert x[0].sigma == pytest.approx(y[0].sigma, abs=0.3)


def test_without_draws_the_layer_is_the_chain_without_draws() -> None:
    groups = [(Rating(20.0 + 3 * i, 5.0),) for i in range(5)]
    layer = TrueSkill(draw_probability=0.0, tie_model="tie-layer").rate(groups)
    chain = TrueSkill(draw_probability=0.0).rate(groups)
    assert layer == chain
    with pytest.raises(RatingInputError, match="draw_probability is 0"):
        TrueSkill(draw_probability=0.0, tie_model="tie-layer").rate(groups, [0, 1, 1, 2, 3])


def test_a_thousand_teams_in_sixty_places() -> None:
    """Tournament scale (seed 002 §4): dozens of tied groups, finite and converged."""
    rng = random.Random(2)
    groups = [
        tuple(Rating(rng.gauss(25, 4), rng.uniform(1, 8)) for _ in range(rng.randint(1, 6)))
        for _ in range(1000)
    ]
    ranks = sorted(rng.randrange(60) for _ in range(1000))
    env = TrueSkill(draw_probability=0.2, tie_model="tie-layer")
    loose = env.rate(groups, ranks)
    tight = TrueSkill(draw_probability=0.2, tie_model="tie-layer", tolerance=1e-13).rate(groups, ranks)
    for x, y in zip(loose, tight, strict=True):
        for a, b in zip(x, y, strict=True):
            assert math.isfinite(a.mu) and math.isfinite(a.sigma)
            assert a.mu == pytest.approx(b.mu, abs=1e-6)
    # Better places end higher on average.
    by_place: dict[int, list[float]] = {}
    for rank, before, after in zip(ranks, groups, loose, strict=True):
        by_place.setdefault(rank, []).extend(n.mu - o.mu for o, n in zip(before, after, strict=True))
    first, last = min(by_place), max(by_place)
    assert sum(by_place[first]) / len(by_place[first]) > 0 > sum(by_place[last]) / len(by_place[last])


def test_unknown_tie_model_is_refused() -> None:
    with pytest.raises(RatingInputError, match="tie_model must be one of chain, tie-layer"):
        TrueSkill(tie_model="layer")
