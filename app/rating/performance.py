"""Team performance as an affine function of its players' performances (seed 002 §2).

TrueSkill takes a team's performance to be the sum of its players' performances. Seed 002
shows that this over-rewards undersized teams and lets any affine function t = Σ α_i·p_i take
its place; non-linear functions are approximated by coefficients that depend on the prior
means, computed just before the match (the affine approximation of §2). Every model below
only chooses the coefficients α; the factor graph and its inference do not change.

Partial-play weights w_i multiply the coefficients in every model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from app.rating.errors import RatingInputError
from app.rating.rating import Rating

TeamPerformance = Literal["sum", "mean", "weighted", "size-penalised-mean"]
TEAM_PERFORMANCES: tuple[str, ...] = get_args(TeamPerformance)

# Seed 002 eq. 4: a team of n <= 6 plays at its mean times (0.88 + 0.02·n).
PAPER_C0 = 0.88
PAPER_C1 = 0.02
PAPER_ROSTER_CAP = 6


@dataclass(frozen=True, slots=True)
class PerformanceModel:
    """Which team-performance function to use, with the constants of eq. 4."""

    kind: str = "sum"
    c0: float = PAPER_C0
    c1: float = PAPER_C1
    roster_cap: int = PAPER_ROSTER_CAP

    def __post_init__(self) -> None:
        if self.kind not in TEAM_PERFORMANCES:
            raise RatingInputError(
                f"team_performance must be one of {', '.join(TEAM_PERFORMANCES)}, got {self.kind!r}"
            )
        if self.roster_cap < 1:
            raise RatingInputError(f"roster_cap must be at least 1, got {self.roster_cap!r}")
        # The multiplier must stay positive for every roster size it applies to.
        for n in (1, self.roster_cap):
            if not (self.c0 + self.c1 * n > 0.0):
                raise RatingInputError(
                    f"c0 + c1·n must be positive for n in [1, {self.roster_cap}], "
                    f"got c0={self.c0!r}, c1={self.c1!r}"
                )

    def coefficients(
        self,
        ratings: list[list[Rating]],
        weights: list[list[float]],
        given: list[list[float]] | None,
    ) -> list[list[float]]:
        """α_i for every player, in the shape of `ratings`."""
        if given is not None and self.kind != "weighted":
            raise RatingInputError(
                f"coefficients are only used with team_performance='weighted', not {self.kind!r}"
            )
        if self.kind == "sum":
            return weights
        if self.kind == "weighted":
            if given is None:
                return weights
            return [
                [w * c for w, c in zip(ws, cs, strict=True)] for ws, cs in zip(weights, given, strict=True)
            ]
        if self.kind == "mean":
            return [[w / len(ws) for w in ws] for ws in weights]
        return [self._size_penalised(team, ws) for team, ws in zip(ratings, weights, strict=True)]

    def _size_penalised(self, team: list[Rating], weights: list[float]) -> list[float]:
        """Seed 002 eq. 4, with c0, c1 and the cap N as parameters.

        n <= N: α = (c0 + c1·n)/n, the mean with a penalty for missing players.
        n > N (substitutions): every player keeps the coefficient (mean of the top-N prior
        means)/(sum of all prior means), so that the team plays like its best N, times
        c0 + c1·N (which is 1 with the paper's values, as in eq. 4). When the prior means
        are not positive that ratio has no meaning, and the plain penalised mean is used.
        """
        n = len(team)
        cap = self.roster_cap
        if n <= cap:
            factor = (self.c0 + self.c1 * n) / n
        else:
            means = sorted((r[0] for r in team), reverse=True)
            total = sum(means)
            top = sum(means[:cap]) / cap
            scale = self.c0 + self.c1 * cap
            factor = scale * top / total if total > 0.0 and top > 0.0 else scale / n
        return [w * factor for w in weights]
