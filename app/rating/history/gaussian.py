"""The Gaussian of TrueSkill Through Time (seed 001), with the algebra of its messages.

Unlike app.rating.Gaussian (natural parameters, for the EP of one match), this one follows
the `trueskillthroughtime` package's call shape: it holds (mu, sigma), sigma may be
infinite (the uninformative message), `+` and `-` combine independent random variables
(means add, variances add) and `*` and `/` multiply and divide densities.

It is the package's public class, at the edge only: what Player, History.learning_curves and
Game.posteriors hand out. The engine computes on floats, messages as (precision,
precision·mean) as in the history's arrays (game.likelihoods, messages).
"""

from __future__ import annotations

import math

INF = math.inf


class Gaussian:
    """N(mu, sigma²); sigma = inf is the flat message, sigma = 0 a point mass."""

    __slots__ = ("mu", "sigma")

    def __init__(self, mu: float = 0.0, sigma: float = 6.0) -> None:
        mu = float(mu)
        sigma = float(sigma)
        if not sigma >= 0.0:
            raise ValueError(f"sigma must be zero or positive, got {sigma!r}")
        if not math.isfinite(mu) and math.isfinite(sigma):
            raise ValueError(f"mu must be finite, got {mu!r}")
        self.mu = mu
        self.sigma = sigma

    @classmethod
    def natural(cls, pi: float, tau: float) -> Gaussian:
        """From precision and precision·mean; a non-positive precision is the flat message."""
        if pi > 0.0:
            return cls(tau / pi, math.sqrt(1.0 / pi)) if math.isfinite(pi) else cls(0.0, 0.0)
        return cls(0.0, INF)

    @property
    def pi(self) -> float:
        return self.sigma**-2 if self.sigma > 0.0 else INF

    @property
    def tau(self) -> float:
        return self.mu * self.sigma**-2 if self.sigma > 0.0 else INF

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((self.mu, self.sigma))

    def __add__(self, other: Gaussian) -> Gaussian:
        return Gaussian(self.mu + other.mu, math.hypot(self.sigma, other.sigma))

    def __sub__(self, other: Gaussian) -> Gaussian:
        return Gaussian(self.mu - other.mu, math.hypot(self.sigma, other.sigma))

    def __mul__(self, other: Gaussian | float) -> Gaussian:
        if isinstance(other, (int, float)):
            if math.isinf(other):
                return Gaussian(0.0, INF)
            return Gaussian(other * self.mu, abs(other) * self.sigma)
        if self.sigma == 0.0 or other.sigma == 0.0:
            return Gaussian(self.mu if self.sigma == 0.0 else other.mu, 0.0)
        return Gaussian.natural(self.pi + other.pi, self.tau + other.tau)

    __rmul__ = __mul__

    def __truediv__(self, other: Gaussian) -> Gaussian:
        if other.sigma == INF:
            return Gaussian(self.mu, self.sigma)
        return Gaussian.natural(self.pi - other.pi, self.tau - other.tau)

    def forget(self, gamma: float, t: float) -> Gaussian:
        """The skill after `t` time units of drift with variance gamma² per unit (seed 001 eq. 1)."""
        return Gaussian(self.mu, math.sqrt(self.sigma**2 + t * gamma**2))

    def delta(self, other: Gaussian) -> tuple[float, float]:
        return abs(self.mu - other.mu), abs(self.sigma - other.sigma)

    def exclude(self, other: Gaussian) -> Gaussian:
        """The random variable that, added to `other`, gives this one."""
        return Gaussian(self.mu - other.mu, math.sqrt(max(self.sigma**2 - other.sigma**2, 0.0)))

    def isapprox(self, other: Gaussian, tol: float = 1e-4) -> bool:
        return abs(self.mu - other.mu) < tol and abs(self.sigma - other.sigma) < tol

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Gaussian) and (self.mu, self.sigma) == (other.mu, other.sigma)

    def __hash__(self) -> int:
        return hash((self.mu, self.sigma))

    def __repr__(self) -> str:
        return f"N(mu={self.mu:.3f}, sigma={self.sigma:.3f})"


N01 = Gaussian(0.0, 1.0)
N00 = Gaussian(0.0, 0.0)
Ninf = Gaussian(0.0, INF)
