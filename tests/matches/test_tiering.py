"""The walk of placements and tiers through a group's matches (app.matches.tiering)."""

from __future__ import annotations

import numpy as np

from app.matches.responses import _tier
from app.matches.tiering import walk
from app.rating.tiers import Tiers

# Two tiers: the settings this process cached before another process added a third.
CACHED = Tiers(("bronze", "silver"), (0.0, 10.0))


def test_a_tier_of_newer_settings_than_the_cached_ones_reads_as_none_not_an_index_error() -> None:
    # Player 0 holds tier 2 (stored under the new, three-tier settings) and is still placing
    # (5 placement matches), so the walk does not step them: their tier before and after is
    # what they held. Player 1 is placed and steps as usual.
    tier: list[int | None] = [2, 1]
    walked = walk(
        start=[0, 2],
        player=[0, 1],
        rated=[True],
        after_mu=np.array([30.0, 30.0]),
        after_sigma=np.array([1.0, 1.0]),
        k=[3.0],
        tiers=[CACHED],
        placements=[5],
        matches=[0, 10],
        tier=tier,
    )
    assert walked.before == [None, 1] and walked.after == [None, 1]
    assert tier == [None, 1]
    # The response names only tiers the cached settings have.
    assert _tier(CACHED, walked.before[0], walked.after[0]) == {
        "before": None, "after": None, "promoted": False, "demoted": False,
    }  # fmt: skip
