"""The rating core: TrueSkill (seed 000) as a pure library.

    from app.rating import TrueSkill, Rating

has the call shape of the `trueskill` package, plus win and draw probabilities,
`scores=` and tails that stay finite. It imports only the standard library and NumPy.
"""

from __future__ import annotations

from typing import Any

from app.rating.environment import TrueSkill
from app.rating.errors import RatingInputError
from app.rating.gaussian import Gaussian
from app.rating.rating import Rating

__all__ = [
    "Gaussian",
    "Rating",
    "RatingInputError",
    "TrueSkill",
    "draw_probability",
    "expose",
    "global_env",
    "quality",
    "quality_1vs1",
    "rate",
    "rate_1vs1",
    "setup",
    "win_probability",
]

_global_env = TrueSkill()


def global_env() -> TrueSkill:
    """The environment the module-level functions use."""
    return _global_env


def setup(*args: Any, **kwargs: Any) -> TrueSkill:
    """Replace the environment of the module-level functions, as `trueskill.setup` does."""
    global _global_env
    _global_env = TrueSkill(*args, **kwargs)
    return _global_env


def rate(rating_groups: Any, ranks: Any = None, weights: Any = None, *, scores: Any = None) -> list[Any]:
    return _global_env.rate(rating_groups, ranks, weights, scores=scores)


def quality(rating_groups: Any, weights: Any = None) -> float:
    return _global_env.quality(rating_groups, weights)


def win_probability(rating_groups: Any, weights: Any = None) -> list[float]:
    return _global_env.win_probability(rating_groups, weights)


def draw_probability(rating_groups: Any, weights: Any = None) -> float:
    return _global_env.draw_probability_of(rating_groups, weights)


def expose(rating: Rating, k: float = 3.0) -> float:
    return _global_env.expose(rating, k)


def rate_1vs1(
    rating1: Rating,
    rating2: Rating,
    drawn: bool = False,
    env: TrueSkill | None = None,
) -> tuple[Rating, Rating]:
    return (env or _global_env).rate_1vs1(rating1, rating2, drawn)


def quality_1vs1(rating1: Rating, rating2: Rating, env: TrueSkill | None = None) -> float:
    return (env or _global_env).quality_1vs1(rating1, rating2)
