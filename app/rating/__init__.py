"""The rating core: TrueSkill (seed 000) as a pure library, and a drop-in for `trueskill`.

    from app.rating import TrueSkill, Rating, rate, quality, setup

has the names, defaults and call shapes of the `trueskill` package (seed 004), plus win
and draw probabilities, `scores=`, seed 002's team models, and tails that stay finite
where the package raises FloatingPointError. It imports only the standard library and
NumPy. The factor graph and its inference are in `inference`.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from app.rating import normal
from app.rating.environment import TrueSkill, global_env, quality_1vs1, rate_1vs1, setup
from app.rating.errors import RatingInputError, RatingTypeError
from app.rating.gaussian import Gaussian
from app.rating.rating import BETA, DELTA, DRAW_PROBABILITY, MU, SIGMA, TAU, Rating, conservative

__all__ = [
    "BETA",
    "DELTA",
    "DRAW_PROBABILITY",
    "MU",
    "SIGMA",
    "TAU",
    "Gaussian",
    "Rating",
    "RatingInputError",
    "RatingTypeError",
    "TrueSkill",
    "calc_draw_margin",
    "calc_draw_probability",
    "conservative",
    "draw_probability",
    "dynamic_draw_probability",
    "expose",
    "global_env",
    "match_quality",
    "quality",
    "quality_1vs1",
    "rate",
    "rate_1vs1",
    "setup",
    "transform_ratings",
    "win_probability",
]


def rate(
    rating_groups: Any, ranks: Any = None, weights: Any = None, min_delta: float | None = None
) -> list[Any]:
    """TrueSkill.rate of the global environment."""
    return global_env().rate(rating_groups, ranks, weights, min_delta)


def quality(rating_groups: Any, weights: Any = None) -> float:
    """TrueSkill.quality of the global environment."""
    return global_env().quality(rating_groups, weights)


def expose(rating: Rating) -> float:
    """TrueSkill.expose of the global environment: mu − (env.mu/env.sigma)·sigma."""
    return global_env().expose(rating)


def win_probability(rating_groups: Any, weights: Any = None) -> list[float]:
    return global_env().win_probability(rating_groups, weights)


def draw_probability(rating_groups: Any, weights: Any = None) -> float:
    return global_env().draw_probability_of(rating_groups, weights)


def calc_draw_probability(draw_margin: float, size: int, env: TrueSkill | None = None) -> float:
    """The draw probability of a draw margin between two teams of `size` players in all
    (seed 000 §4.1): 2·Φ(eps/(sqrt(size)·beta)) − 1."""
    env = env or global_env()
    return 2.0 * env.cdf(draw_margin / (math.sqrt(size) * env.beta)) - 1.0


def calc_draw_margin(draw_probability: float, size: int, env: TrueSkill | None = None) -> float:
    """The draw margin of a draw probability between two teams of `size` players in all
    (seed 000 §4.1): Φ⁻¹((p + 1)/2)·sqrt(size)·beta."""
    env = env or global_env()
    return normal.draw_margin(draw_probability, math.sqrt(size) * env.beta)


# The package's deprecated functions, warning as there.


def transform_ratings(rating_groups: Any, ranks: Any = None, min_delta: float | None = None) -> list[Any]:
    """Deprecated: rate of the global environment, single ratings taken as teams of one."""
    return global_env().transform_ratings(rating_groups, ranks, min_delta)


def match_quality(rating_groups: Any) -> float:
    """Deprecated: quality of the global environment, single ratings taken as teams of one."""
    return global_env().match_quality(rating_groups)


def dynamic_draw_probability(rating1: Rating, rating2: Rating, env: TrueSkill | None = None) -> float:
    """Deprecated: quality_1vs1, which the package once used as a draw probability."""
    warnings.warn("Use quality_1vs1() instead", DeprecationWarning, stacklevel=2)
    return quality_1vs1(rating1, rating2, env=env)
