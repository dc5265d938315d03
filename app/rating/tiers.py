"""Tiers: the division a player is shown, from their displayed rating, with hysteresis.

The displayed rating is offset + scale · conservative (conservative itself by default; clients
show it rounded). A tier's `min` is in those units and compared with the exact value, not the
rounded one, so a mode whose display is conservative itself tiers by conservative.

A player is promoted as soon as the displayed rating reaches a higher tier's min, and demoted
only when it falls below their own tier's min minus the margin, to the tier it then lies in: a
player near a threshold does not bounce between two tiers on every match (the "4-5 wins to
change division" of live games).
The lowest tier holds everyone below the second one.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Tiers:
    """A mode's tiers, lowest first (`mins` strictly ascending), and how ratings are shown."""

    names: tuple[str, ...]
    mins: tuple[float, ...]
    margin: float = 0.0
    scale: float = 1.0
    offset: float = 0.0

    def display(self, conservative: float) -> float:
        """The displayed rating of a conservative estimate."""
        return displayed(conservative, self.scale, self.offset)

    def base(self, shown: float) -> int:
        """The tier a displayed rating lies in, without history: the highest whose min it reaches."""
        return max(bisect.bisect_right(self.mins, shown) - 1, 0)

    def step(self, current: int | None, conservative: float) -> int:
        """The tier after a rating change from tier `current` (None: not tiered yet, placed
        where the rating lies)."""
        shown = self.display(conservative)
        lies = self.base(shown)
        if current is None or current >= len(self.mins) or lies > current:
            return lies
        if shown < self.mins[current] - self.margin:
            return lies
        return current


def displayed(conservative: float, scale: float, offset: float) -> float:
    """offset + scale · conservative, as SQL's ranked_tier (migration 0015) computes it."""
    return offset + scale * conservative


def tiers_of(
    listed: Sequence[dict[str, object]] | None, margin: float = 0.0, scale: float = 1.0, offset: float = 0.0
) -> Tiers | None:
    """A mode's stored tiers ([{"name", "min"}], ascending), or None for a mode without."""
    if not listed:
        return None
    return Tiers(
        tuple(str(t["name"]) for t in listed),
        tuple(float(t["min"]) for t in listed),  # type: ignore[arg-type]
        margin,
        scale,
        offset,
    )
