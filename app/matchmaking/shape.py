"""What a match of a mode looks like: its teams, their size, how far both may shrink, and roles.

A match forms at its full size (`teams` × `team_size`) when it can. A mode may let it start
smaller: with `team_size_min` players a team, or `teams_min` teams (a free-for-all, a battle
royale). The size a match accepts relaxes linearly from the full size to the minimum over the
seconds of its longest wait, as the quality threshold does (quality.Relaxation): a match of
`players` is accepted once full − players ≤ (full − minimum) · waited / seconds. Every team of
a match has the same size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.matchmaking.pool import FloatArray, IntArray
from app.matchmaking.roles import Composition

# Float slack when a relaxed size is compared with a whole number of players.
_SLACK = 1e-9


@dataclass(frozen=True, slots=True)
class MatchShape:
    """A mode's match: `teams` × `team_size` at full size, shrinking to the minimums."""

    teams: int
    team_size: int
    teams_min: int = 0  # 0: no fewer than `teams`
    team_size_min: int = 0  # 0: no smaller than `team_size`
    composition: Composition | None = None
    # Every (teams, team_size) between the minimums and the full size, most players first.
    shapes: tuple[tuple[int, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        teams_min = self.teams_min or self.teams
        size_min = self.team_size_min or self.team_size
        if not 2 <= teams_min <= self.teams:
            raise ValueError(f"teams_min ({teams_min}) must be between 2 and teams ({self.teams})")
        if not 1 <= size_min <= self.team_size:
            raise ValueError(f"team_size_min ({size_min}) must be between 1 and team_size ({self.team_size})")
        if self.composition is not None and self.composition.team_size != self.team_size:
            raise ValueError(
                f"the roles add up to {self.composition.team_size} players, not team_size {self.team_size}"
            )
        if self.composition is not None and size_min != self.team_size:
            raise ValueError("a composition fixes the team size: team_size_min must equal team_size")
        shapes = [
            (t, s) for t in range(teams_min, self.teams + 1) for s in range(size_min, self.team_size + 1)
        ]
        shapes.sort(key=lambda ts: (-ts[0] * ts[1], -ts[0]))
        object.__setattr__(self, "shapes", tuple(shapes))

    @property
    def players(self) -> int:
        return self.teams * self.team_size

    @property
    def minimum(self) -> int:
        """The fewest players a match may have."""
        return self.shapes[-1][0] * self.shapes[-1][1]

    @property
    def flexible(self) -> bool:
        return len(self.shapes) > 1

    def accepted(self, waited: FloatArray, seconds: float) -> IntArray:
        """Per longest wait: the fewest players a match may have."""
        fraction = np.ones_like(waited) if seconds <= 0 else np.minimum(waited / seconds, 1.0)
        shrink = np.floor((self.players - self.minimum) * fraction + _SLACK).astype(np.int64)
        result: IntArray = self.players - shrink
        return result

    def smaller(self, most: int, least: int) -> list[tuple[int, int]]:
        """The shapes below full size with `least` to `most` players, most players first."""
        return [(t, s) for t, s in self.shapes[1:] if least <= t * s <= most]
