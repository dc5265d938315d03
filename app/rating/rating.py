"""The Rating value type: a player's skill belief N(mu, sigma²)."""

from __future__ import annotations

import math
import warnings
from operator import itemgetter
from typing import Any

from app.rating.errors import RatingInputError

# The trueskill package's defaults (seed 004), the Xbox Live values of seed 000 §4.
MU = 25.0
SIGMA = MU / 3.0
BETA = SIGMA / 2.0
TAU = SIGMA / 100.0
DRAW_PROBABILITY = 0.10
# The package's default min_delta (its sweeps' stopping threshold).
DELTA = 0.0001

# The domain on which the numerics are verified against extended-precision references
# (tests/rating/test_robustness.py). Values outside it are refused, never mis-rated.
MU_LIMIT = 1e15
SIGMA_MIN = 1e-12
SIGMA_MAX = 1e15

# The prior of `Rating()`: the global environment's mu and sigma, kept by `setup`.
GLOBAL_PRIOR = {"mu": MU, "sigma": SIGMA}


def conservative(mu: float, sigma: float, k: float) -> float:
    """The conservative skill estimate mu − k·sigma that leaderboards order by (seed 000 §4.2
    uses k = 3). Its SQL twin is app.db.conservative.conservative_sql."""
    return mu - k * sigma


class Rating(tuple[float, float]):
    """An immutable (mu, sigma) pair, validated on construction.

    As in the trueskill package, mu and sigma default to the global environment's
    (`setup(mu=50)` makes `Rating()` N(50, sigma²)), `Rating((mu, sigma))` and
    `Rating(gaussian)` copy, ratings order by mu, and float()/int() give mu.

    A tuple subclass so that creating the engine's outputs is cheap: the engine builds
    its results with `tuple.__new__(Rating, (mu, sigma))`, which skips the validation of
    values it computed itself.
    """

    __slots__ = ()

    def __new__(cls, mu: Any = None, sigma: float | None = None) -> Rating:
        if isinstance(mu, tuple):
            mu, sigma = mu
        elif hasattr(mu, "pi") and hasattr(mu, "tau"):
            mu, sigma = mu.mu, mu.sigma
        mu = GLOBAL_PRIOR["mu"] if mu is None else mu
        sigma = GLOBAL_PRIOR["sigma"] if sigma is None else sigma
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

    # The package orders ratings by mu alone (equality stays mu and sigma).
    def __lt__(self, other: tuple[Any, ...]) -> bool:
        return bool(self[0] < other[0])

    def __le__(self, other: tuple[Any, ...]) -> bool:
        return bool(self[0] <= other[0])

    def __gt__(self, other: tuple[Any, ...]) -> bool:
        return bool(self[0] > other[0])

    def __ge__(self, other: tuple[Any, ...]) -> bool:
        return bool(self[0] >= other[0])

    def __float__(self) -> float:
        return self[0]

    def __int__(self) -> int:
        return int(self[0])

    def __complex__(self) -> complex:
        return complex(self[0])

    @property
    def exposure(self) -> float:
        """Deprecated (as in the package): the global environment's expose(self)."""
        warnings.warn("Use TrueSkill.expose() instead", DeprecationWarning, stacklevel=2)
        k = GLOBAL_PRIOR["mu"] / GLOBAL_PRIOR["sigma"]
        return conservative(self[0], self[1], k)

    def __repr__(self) -> str:
        return f"Rating(mu={self[0]:.3f}, sigma={self[1]:.3f})"
