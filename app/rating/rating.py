"""The Rating value type: a player's skill belief N(mu, sigma²)."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from operator import itemgetter
from typing import Any

from app.rating.errors import RatingInputError

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0

# The domain on which the numerics are verified against extended-precision references
# (tests/rating/test_robustness.py). Values outside it are refused, never mis-rated.
MU_LIMIT = 1e15
SIGMA_MIN = 1e-12
SIGMA_MAX = 1e15


class Rating(tuple[float, float]):
    """An immutable (mu, sigma) pair, validated on construction.

    A tuple subclass so that creating the engine's outputs costs one allocation; the
    engine builds its results with `trusted_rating((mu, sigma))`, which skips validation
    of values it computed itself.
    """

    __slots__ = ()

    def __new__(cls, mu: float | None = None, sigma: float | None = None) -> Rating:
        mu = DEFAULT_MU if mu is None else mu
        sigma = DEFAULT_SIGMA if sigma is None else sigma
        try:
            mu = float(mu)
            sigma = float(sigma)
        except (TypeError, ValueError):
            raise RatingInputError(f"mu and sigma must be numbers, got {mu!r} and {sigma!r}") from None
        if not math.isfinite(mu):
            raise RatingInputError(f"mu must be finite, got {mu!r}")
        if not (sigma > 0.0) or math.isinf(sigma):
            raise RatingInputError(f"sigma must be positive and finite, got {sigma!r}")
        if abs(mu) > MU_LIMIT:
            raise RatingInputError(f"mu must be within ±{MU_LIMIT:g}, got {mu!r}")
        if not SIGMA_MIN <= sigma <= SIGMA_MAX:
            raise RatingInputError(f"sigma must be in [{SIGMA_MIN:g}, {SIGMA_MAX:g}], got {sigma!r}")
        return tuple.__new__(cls, (mu, sigma))

    mu: float = property(itemgetter(0))  # type: ignore[assignment]
    sigma: float = property(itemgetter(1))  # type: ignore[assignment]

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self[0], self[1])

    def __repr__(self) -> str:
        return f"Rating(mu={self[0]:.3f}, sigma={self[1]:.3f})"


# A Rating from values the engine computed itself: no validation, one C call.
trusted_rating: Callable[[tuple[float, float]], Rating] = partial(tuple.__new__, Rating)
