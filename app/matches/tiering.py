"""Placements and tiers through rated matches: what each participant played and the tier
they went from and to, in the order the matches were applied.

One walk for every writer of rated matches: the match pipeline (app.matches.recording) and
replay (app.jobs.replay), so a replay tiers the history as the posts did. A player counts a
match only when it was rated. A player is placed (leaves the provisional state and gets a
tier) once they have played the mode's placement matches (its min_matches_for_leaderboard);
from then on each match moves their tier by the hysteresis rule (app.rating.tiers) on the
conservative estimate after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.rating import conservative
from app.rating.tiers import Tiers

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(slots=True)
class Walked:
    """Per entry: the player's matches after this one, and their tier before and after it
    (indices into the mode's tiers; None: no tier)."""

    played: list[int]
    before: list[int | None]
    after: list[int | None]


def walk(
    start: Sequence[int],
    player: Sequence[int],
    rated: Sequence[bool],
    after_mu: Array,
    after_sigma: Array,
    k: Sequence[float],
    tiers: Sequence[Tiers | None],
    placements: Sequence[int],
    matches: list[int],
    tier: list[int | None],
) -> Walked:
    """Walk the matches in order; `matches` and `tier` (by player index) are each player's
    counts and tier before the first, updated in place to after the last."""
    entries = len(player)
    played: list[int] = [0] * entries
    before: list[int | None] = [None] * entries
    after: list[int | None] = [None] * entries
    a_mu, a_sigma = after_mu.tolist(), after_sigma.tolist()
    for i, done in enumerate(rated):
        scale, least, kk = tiers[i], placements[i], k[i]
        for e in range(start[i], start[i + 1]):
            p = player[e]
            now = tier[p]
            if scale is not None and now is not None and now >= len(scale.mins):
                # A tier of settings newer than these rules (cached in this process for up to
                # app.modes.service.CACHE_SECONDS after another one changed the tiers): no
                # tier of theirs. The write stores the current settings' (repository._TIER).
                now = tier[p] = None
            before[e] = now
            if done:
                count = matches[p] = matches[p] + 1
                if scale is not None and count >= least:
                    now = tier[p] = scale.step(now, conservative(a_mu[e], a_sigma[e], kk))
            played[e] = matches[p]
            after[e] = now
    return Walked(played, before, after)


def tier_column(tier: Sequence[int | None]) -> npt.NDArray[np.int32]:
    """Tiers as the write's int4 column (-1: none)."""
    return np.array([-1 if t is None else t for t in tier], dtype=np.int32)
