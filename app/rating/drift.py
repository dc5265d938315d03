"""Skill drift with time away: seed 001's dynamic factor, per day elapsed (eq. 4).

TrueSkill adds tau² to a player's variance before each match (seed 000 §4.2), whatever the
time since the last. TrueSkill Through Time models skill as drifting by gamma² per unit of
time between a player's events (seed 001 eq. 4, the dynamic factor N(s_t; s_{t-1}, gamma²));
its History adds gamma²·elapsed. The online ratings take the same dynamic: before a player's
next match sigma² grows by gamma² per day since their last match, then tau is added as before.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

DAY_US = 86_400_000_000  # microseconds in a day: played_at is kept in microseconds
NEVER = np.iinfo(np.int64).min  # last played of a player without a rated match

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]


def drifted_sigma(sigma: float, gamma: float, days: float) -> float:
    """sqrt(sigma² + gamma²·days) for days > 0 (seed 001 eq. 4); sigma itself otherwise, to
    the bit, so a mode without drift rates as TrueSkill does."""
    if gamma <= 0.0 or days <= 0.0:
        return sigma
    return math.sqrt(sigma * sigma + gamma * gamma * days)


def drift_columns(sigma: Array, last_us: Index, at_us: Index, gamma: float) -> Array:
    """`drifted_sigma` over columns: each sigma drifted from its last played instant (NEVER:
    none, no drift) to the instant `at_us`, both in microseconds since 1970."""
    if gamma <= 0.0:
        return sigma
    away = np.where(last_us == NEVER, 0, at_us - last_us)
    days = np.maximum(away, 0) / DAY_US
    return np.where(days > 0.0, np.sqrt(sigma * sigma + gamma * gamma * days), sigma)
