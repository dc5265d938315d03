"""app.rating as a drop-in for the trueskill package (0.4.5): names, defaults, behaviour.

Where the package itself is the oracle it runs with min_delta = 1e-12 (converged) and its
scipy backend (its own erfc is good to ~1e-7 only), or its mpmath backend where its default
one raises FloatingPointError.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import mpmath
import pytest
import trueskill

import app.rating as t
from app.rating import Gaussian, Rating, RatingInputError, TrueSkill


@pytest.fixture(autouse=True)
def restore_global_environment() -> Iterator[None]:
    before = t.global_env()
    yield
    t.setup(env=before)


def test_default_constants_are_the_packages() -> None:
    assert (t.MU, t.SIGMA, t.BETA, t.TAU, t.DRAW_PROBABILITY) == (
        trueskill.MU,
        trueskill.SIGMA,
        trueskill.BETA,
        trueskill.TAU,
        trueskill.DRAW_PROBABILITY,
    )


@pytest.mark.parametrize(
    "args",
    [
        (),
        (1000.0, 200.0),
        (0.0, 1.0),
        (1000.0, 200.0, 50.0),
        (25.0, 8.0, 4.0, 0.5),
        (30.0, 5.0, 2.0, 0.1, 0.3),
    ],
)
def test_every_constructor_form_keeps_the_packages_defaults(args: tuple[float, ...]) -> None:
    ours, theirs = TrueSkill(*args), trueskill.TrueSkill(*args, backend="scipy")
    assert (ours.mu, ours.sigma, ours.beta, ours.tau, ours.draw_probability) == (
        theirs.mu,
        theirs.sigma,
        theirs.beta,
        theirs.tau,
        theirs.draw_probability,
    )
    mine = t.rate_1vs1(ours.create_rating(), ours.create_rating(ours.mu - ours.sigma), env=ours)
    peer = trueskill.rate_1vs1(
        theirs.create_rating(), theirs.create_rating(theirs.mu - theirs.sigma), min_delta=1e-12, env=theirs
    )
    for a, b in zip(mine, peer, strict=True):
        assert a.mu == pytest.approx(b.mu, rel=1e-12, abs=1e-9)
        assert a.sigma == pytest.approx(b.sigma, rel=1e-12)


def test_a_scaled_environment_rates_as_the_package() -> None:
    """The issue's case: TrueSkill(mu=1000, sigma=200) keeps beta = 25/6, tau = 25/300."""
    env = TrueSkill(mu=1000, sigma=200)
    (winner, loser) = t.rate_1vs1(env.create_rating(), env.create_rating(), env=env)
    assert (round(winner.mu, 1), round(winner.sigma, 1)) == (1113.0, 165.1)
    assert round(loser.mu, 1) == 887.0


def test_expose_uses_mu_over_sigma_of_the_environment() -> None:
    rng = random.Random(5)
    for env_args in [(), (1000.0, 200.0), (50.0, 10.0)]:
        ours, theirs = TrueSkill(*env_args), trueskill.TrueSkill(*env_args)
        assert ours.expose(ours.create_rating()) == 0
        for _ in range(20):
            mu, sigma = rng.uniform(-100, 2000), rng.uniform(0.1, 300)
            # The package keeps (pi, tau), so its mu and sigma come back within an ulp or two.
            assert ours.expose(Rating(mu, sigma)) == pytest.approx(
                theirs.expose(trueskill.Rating(mu, sigma)), rel=1e-13
            )
    assert TrueSkill().expose(Rating(30.0, 2.0), k=2.0) == 26.0


def test_rating_follows_the_global_environment() -> None:
    t.setup(mu=50)
    assert tuple(Rating()) == (50.0, 25.0 / 3.0)
    env = TrueSkill(mu=10, sigma=2)
    assert env.make_as_global() is env
    assert t.global_env() is env
    assert tuple(Rating()) == (10.0, 2.0)
    assert t.setup(env=TrueSkill()) is t.global_env()
    assert tuple(Rating()) == (25.0, 25.0 / 3.0)


def test_module_functions_use_the_global_environment() -> None:
    t.setup(draw_probability=0.5)
    (a,), (b,) = t.rate([(Rating(),), (Rating(),)])
    assert (round(a.mu, 3), round(a.sigma, 3), round(b.mu, 3)) == (30.267, 7.077, 19.733)
    assert t.expose(Rating(25.0, 25.0 / 3.0)) == 0


def test_draw_probability_helpers_invert_each_other_and_match_the_package() -> None:
    env = TrueSkill()
    for p in (0.0, 0.1, 0.5, 0.9):
        for size in (2, 3, 8):
            margin = t.calc_draw_margin(p, size, env)
            assert margin == pytest.approx(
                trueskill.calc_draw_margin(p, size, trueskill.TrueSkill(backend="scipy")), abs=1e-12
            )
            assert t.calc_draw_probability(margin, size, env) == pytest.approx(p, abs=1e-12)


def test_the_packages_win_probability_recipe_works_on_env_cdf() -> None:
    """Seed 004's recipe: Φ(Δmu / sqrt(n·beta² + Σ sigma²)) with env.cdf; it is our
    two-team win_probability."""
    env = TrueSkill()
    team1, team2 = [Rating(30, 4), Rating(22, 6)], [Rating(25, 5)]
    delta = sum(r.mu for r in team1) - sum(r.mu for r in team2)
    spread = sum(r.sigma**2 for r in team1 + team2)
    recipe = env.cdf(delta / math.sqrt(3 * env.beta**2 + spread))
    assert recipe == pytest.approx(env.win_probability([team1, team2])[0], rel=1e-14)
    assert env.ppf(env.cdf(0.7)) == pytest.approx(0.7, rel=1e-14)
    assert env.pdf(0.0) == pytest.approx(1.0 / math.sqrt(2.0 * math.pi), rel=1e-15)


@pytest.mark.parametrize("backend", [None, "mpmath", "scipy"])
def test_backend_is_accepted_and_changes_nothing(backend: str | None) -> None:
    env = TrueSkill(backend=backend)
    assert env.backend == backend
    groups = [(Rating(20, 5),), (Rating(25, 4), Rating(30, 3)), (Rating(28, 7),)]
    assert env.rate(groups, [1, 0, 1]) == TrueSkill().rate(groups, [1, 0, 1])
    with pytest.raises(ValueError, match="backend"):
        TrueSkill(backend="__not_defined__")


def test_min_delta_is_checked_and_floors_weights_as_in_the_package() -> None:
    groups = [(Rating(),), (Rating(), Rating())]
    for bad in (0, -1.0):
        with pytest.raises(ValueError, match="min_delta"):
            t.rate(groups, min_delta=bad)
    assert t.rate(groups, weights=[(1,), (0, 1)], min_delta=0.1) == t.rate(groups, weights=[(1,), (0.1, 1)])
    floored = trueskill.rate(
        [(trueskill.Rating(),), (trueskill.Rating(), trueskill.Rating())],
        weights=[(1,), (0, 1)],
        min_delta=1e-3,
    )
    ours = t.rate(groups, weights=[(1,), (0, 1)], min_delta=1e-3)
    for team, peer in zip(ours, floored, strict=True):
        for a, b in zip(team, peer, strict=True):
            assert a.mu == pytest.approx(b.mu, abs=1e-6)
            assert a.sigma == pytest.approx(b.sigma, abs=1e-6)


def test_rating_converts_and_orders_by_mu() -> None:
    r = Rating(1.5, 2)
    assert (float(r), int(r), complex(r)) == (1.5, 1, 1.5 + 0j)
    assert Rating(1, 3) < Rating(2, 1) and Rating(2, 1) >= Rating(2, 9) and not Rating(2, 1) < Rating(2, 9)
    assert Rating(1, 2) != Rating(1, 3)
    assert Rating((3.0, 4.0)) == Rating(3.0, 4.0) == Rating(Gaussian(3.0, 4.0))


def test_gaussian_without_sigma_is_a_type_error_as_in_the_package() -> None:
    with pytest.raises(TypeError):
        Gaussian(0)
    with pytest.raises(ValueError, match="sigma must be positive"):
        Gaussian(0, 0)


def test_validate_rating_groups() -> None:
    env = TrueSkill()
    for bad in ([], [()], [(Rating(),)], [(Rating(),), ()]):
        with pytest.raises(ValueError, match=r"at least 2 teams|is empty"):
            env.validate_rating_groups(bad)
    for wrong_kind in ([(Rating(),), {0: Rating()}], [Rating(), Rating()]):
        with pytest.raises(TypeError):
            env.validate_rating_groups(wrong_kind)
        with pytest.raises(RatingInputError):  # and still our ValueError
            env.rate(wrong_kind)
    a, b = Rating(20, 3), Rating(30, 4)
    assert env.validate_rating_groups([[a], (b,)]) == ([(a,), (b,)], None)
    assert env.validate_rating_groups([{"x": a}, {"y": b}]) == ([(a,), (b,)], [("x",), ("y",)])


def test_deprecated_aliases_warn_and_still_work() -> None:
    env = TrueSkill()
    r1, r2, r3 = Rating(), Rating(30, 4), Rating(20, 6)
    with pytest.deprecated_call():
        assert t.transform_ratings([r1, r2, r3]) == t.rate([(r1,), (r2,), (r3,)])
    with pytest.deprecated_call():
        assert t.match_quality([r1, r2, r3]) == t.quality([(r1,), (r2,), (r3,)])
    with pytest.deprecated_call():
        assert env.Rating() == env.create_rating()  # type: ignore[attr-defined]
    with pytest.deprecated_call():
        assert env.rate_1vs1(r1, r2) == t.rate_1vs1(r1, r2, env=env)
    with pytest.deprecated_call():
        assert env.quality_1vs1(r1, r2) == t.quality_1vs1(r1, r2, env=env)
    with pytest.deprecated_call():
        assert Rating(30, 4).exposure == 18.0
    with pytest.deprecated_call():
        assert t.dynamic_draw_probability(r1, r2) == t.quality_1vs1(r1, r2)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(
    ("first", "second", "drawn"), [((100, 5), (10, 5), False), ((25, 10), (25, 0.1), True)]
)
def test_a_dynamic_draw_probability_rates_as_the_package(
    first: tuple[float, float], second: tuple[float, float], drawn: bool
) -> None:
    ours = TrueSkill(draw_probability=t.dynamic_draw_probability)
    theirs = trueskill.TrueSkill(draw_probability=trueskill.dynamic_draw_probability, backend="scipy")
    mine = t.rate_1vs1(Rating(*first), Rating(*second), drawn, env=ours)
    peer = trueskill.rate_1vs1(
        theirs.create_rating(*first), theirs.create_rating(*second), drawn, min_delta=1e-12, env=theirs
    )
    for a, b in zip(mine, peer, strict=True):
        assert a.mu == pytest.approx(b.mu, rel=1e-9)
        assert a.sigma == pytest.approx(b.sigma, rel=1e-9)


@pytest.mark.parametrize(
    ("winner", "loser", "digits"),
    [
        ((-323.263, 2.965), (-48.441, 2.190), 15),
        ((25.0, 25 / 3), (1000.0, 25 / 3), 15),
        ((25.0, 25 / 3), (1e6, 25 / 3), 50),
    ],
)
def test_upsets_the_package_refuses_equal_its_mpmath_backend(
    winner: tuple[float, float], loser: tuple[float, float], digits: int
) -> None:
    """trueskill's suite wants FloatingPointError here (its default backend gives up); its
    mpmath backend, with enough digits, gives the answer, and so do we."""
    saved = mpmath.mp.dps
    try:
        mpmath.mp.dps = digits
        env = trueskill.TrueSkill(backend="mpmath")
        peer = trueskill.rate_1vs1(
            env.create_rating(*winner), env.create_rating(*loser), min_delta=1e-12, env=env
        )
    finally:
        mpmath.mp.dps = saved
    mine = t.rate_1vs1(Rating(*winner), Rating(*loser))
    for a, b in zip(mine, peer, strict=True):
        assert a.mu == pytest.approx(float(b.mu), rel=1e-13)
        assert a.sigma == pytest.approx(float(b.sigma), rel=1e-11)
