"""Seed 000 eq. 7 for many candidate matches at once, and the threshold they must clear.

The general form of eq. 7 depends on a split only through each team's sums (see
app.rating.prediction and balance.split_quality), so whole arrays of candidates are scored
with a handful of NumPy operations: teams along the last axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.matchmaking.pool import FloatArray


@dataclass(frozen=True, slots=True)
class Relaxation:
    """The quality a match must reach, as a function of its longest wait."""

    start: float = 0.4
    floor: float = 0.05
    seconds: float = 60.0

    def threshold(self, waited: float) -> float:
        if self.seconds <= 0 or waited >= self.seconds:
            return self.floor
        return self.start + (self.floor - self.start) * waited / self.seconds

    def thresholds(self, waited: FloatArray) -> FloatArray:
        """`threshold` of every element, with the same arithmetic."""
        if self.seconds <= 0:
            return np.full_like(waited, self.floor)
        relaxed = self.start + (self.floor - self.start) * waited / self.seconds
        return np.where(waited >= self.seconds, self.floor, relaxed)


def pair_quality(
    mu_a: FloatArray, var_a: FloatArray, mu_b: FloatArray, var_b: FloatArray, beta2: float
) -> FloatArray:
    """Eq. 7 for two players: sqrt(2β²/c²)·exp(−(μa − μb)²/(2c²)), c² = 2β² + σa² + σb²."""
    two_beta2 = 2.0 * beta2
    c2 = two_beta2 + var_a + var_b
    delta = mu_a - mu_b
    result: FloatArray = np.sqrt(two_beta2 / c2) * np.exp(-delta * delta / (2.0 * c2))
    return result


def team_quality(mu: FloatArray, spread: FloatArray, players: FloatArray, beta2: float) -> FloatArray:
    """Eq. 7 from per-team sums along the last axis: Σ mu, Σ (sigma² + beta²) and the team's
    players (balance.split_quality, vectorised)."""
    result: FloatArray = np.exp(team_log_quality(mu, spread, players, beta2))
    return result


def team_log_quality(mu: FloatArray, spread: FloatArray, players: FloatArray, beta2: float) -> FloatArray:
    """The logarithm of team_quality: a match of a hundred teams has a quality far below the
    smallest double (each team multiplies in a factor near β²/(σ² + β²)), and is ranked by this.
    O(teams), as the det ratio is Π D · Σ 1/D (app.rating.prediction)."""
    if mu.shape[-1] == 2:
        # Two teams: Π D · Σ 1/D is D₁ + D₂ and the scatter (μ₁ − μ₂)² / (S₁ + S₂), the
        # familiar sqrt(nβ²/c²)·exp(−Δ²/2c²); a handful of operations on the columns instead
        # of reductions along the last axis, which cost more on the many small arrays backfill
        # searches score.
        spread_sum = spread[..., 0] + spread[..., 1]
        delta = mu[..., 0] - mu[..., 1]
        two: FloatArray = 0.5 * (
            np.log(beta2 * (players[..., 0] + players[..., 1]) / spread_sum) - delta * delta / spread_sum
        )
        return two
    noise = beta2 * players
    log_ratio = np.log(noise).sum(-1) + np.log((1.0 / noise).sum(-1))
    inverse = 1.0 / spread
    total = inverse.sum(-1)
    log_ratio -= np.log(spread).sum(-1) + np.log(total)
    centre = (mu * inverse).sum(-1) / total
    scatter = ((mu - centre[..., None]) ** 2 * inverse).sum(-1)
    result: FloatArray = 0.5 * log_ratio - 0.5 * scatter
    return result


def log_thresholds(relax: Relaxation, waited: FloatArray) -> FloatArray:
    """log of Relaxation.thresholds (−inf for a threshold of 0: every match clears it)."""
    with np.errstate(divide="ignore"):
        result: FloatArray = np.log(relax.thresholds(waited))
    return result
