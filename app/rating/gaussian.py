"""A Gaussian in natural parameters: the `trueskill` package's public Gaussian.

Seed 000 §3 passes messages as (pi, tau) = (1/sigma², mu/sigma²): multiplying and
dividing Gaussians is then adding and subtracting parameters. The engine (`inference`,
`tie_layer`) passes them as plain floats in these same parameters; this class is the edge,
with the package's operators (`-` is its convergence distance, not a difference of random
variables): what TrueSkill.performance_posteriors hands out, what Rating(gaussian) takes in.
"""

from __future__ import annotations

import math

from app.rating.errors import RatingInputError, RatingTypeError


class Gaussian:
    """N(mu, sigma²) stored as precision `pi` and precision-adjusted mean `tau`."""

    __slots__ = ("pi", "tau")

    def __init__(
        self, mu: float | None = None, sigma: float | None = None, *, pi: float = 0.0, tau: float = 0.0
    ) -> None:
        if mu is not None:
            if sigma is None:
                # TypeError, as the trueskill package raises (a missing argument).
                raise RatingTypeError("a Gaussian with a mean needs a sigma")
            if not math.isfinite(mu):
                raise RatingInputError(f"mu must be finite, got {mu!r}")
            if not (sigma > 0.0) or math.isinf(sigma):
                raise RatingInputError(f"sigma must be positive and finite, got {sigma!r}")
            pi = sigma**-2
            tau = pi * mu
        self.pi = float(pi)
        self.tau = float(tau)

    @property
    def mu(self) -> float:
        return self.tau / self.pi if self.pi else 0.0

    @property
    def sigma(self) -> float:
        return math.sqrt(1.0 / self.pi) if self.pi else math.inf

    def __mul__(self, other: Gaussian) -> Gaussian:
        return Gaussian(pi=self.pi + other.pi, tau=self.tau + other.tau)

    def __truediv__(self, other: Gaussian) -> Gaussian:
        return Gaussian(pi=self.pi - other.pi, tau=self.tau - other.tau)

    def __sub__(self, other: Gaussian) -> float:
        """The distance used to test convergence: max(|Δtau|, sqrt(|Δpi|))."""
        return max(abs(self.tau - other.tau), math.sqrt(abs(self.pi - other.pi)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Gaussian) and (self.pi, self.tau) == (other.pi, other.tau)

    # The package orders Gaussians by their means.
    def __lt__(self, other: Gaussian) -> bool:
        return self.mu < other.mu

    def __le__(self, other: Gaussian) -> bool:
        return self.mu <= other.mu

    def __gt__(self, other: Gaussian) -> bool:
        return self.mu > other.mu

    def __ge__(self, other: Gaussian) -> bool:
        return self.mu >= other.mu

    def __hash__(self) -> int:
        return hash((self.pi, self.tau))

    def __repr__(self) -> str:
        return f"N(mu={self.mu:.3f}, sigma={self.sigma:.3f})"


def log_product_normalization(a: Gaussian, b: Gaussian) -> float:
    """log ∫ N(x; a)·N(x; b) dx, i.e. log N(a.mu; b.mu, a.sigma² + b.sigma²)."""
    if a.pi == 0.0 or b.pi == 0.0:
        return 0.0
    var = 1.0 / a.pi + 1.0 / b.pi
    diff = a.mu - b.mu
    return -0.5 * math.log(2.0 * math.pi * var) - diff * diff / (2.0 * var)


def log_ratio_normalization(a: Gaussian, b: Gaussian) -> float:
    """log of the normaliser of N(x; a)/N(x; b) (the Moserware convention)."""
    if a.pi == 0.0 or b.pi == 0.0:
        return 0.0
    var_a, var_b = 1.0 / a.pi, 1.0 / b.pi
    var = var_b - var_a
    if var == 0.0:
        return 0.0
    diff = a.mu - b.mu
    return math.log(var_b) + 0.5 * math.log(2.0 * math.pi) - 0.5 * math.log(var) + diff * diff / (2.0 * var)
