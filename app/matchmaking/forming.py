"""What one matchmaking call forms matches under, read once from the pool.

The matchers (pairs.py, windows.py, role_matches.py) take this rather than a dozen arguments:
the pool, the mode's shape and thresholds, the pool's clashing tickets (avoid lists), and,
under roles, each player's accepted roles as a bitmask over the composition's roles.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.matchmaking.avoid import Clashes
from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import FloatArray, IntArray, Match, Pool, TicketRoles
from app.matchmaking.quality import Relaxation
from app.matchmaking.roles import Composition
from app.matchmaking.shape import MatchShape

# One region's latency column of the pool (ms per row) and the rule a window there must keep:
# a window is checked against it when its tickets were let in by a limit another ticket's wait
# widened (regions.py, the borrowed tier).
RegionLimit = tuple[FloatArray, LatencyRule]


@dataclass(frozen=True, slots=True)
class Forming:
    pool: Pool
    shape: MatchShape
    beta2: float
    relax: Relaxation
    max_matches: int
    clashes: Clashes
    # Under roles: per row, each player's accepted roles (bitmask; a ticket that listed none
    # accepts every role) and their order of preference; `masks` is the first player's mask.
    preferences: list[tuple[tuple[int, ...], ...]] | None = None
    player_masks: list[tuple[int, ...]] | None = None
    masks: IntArray | None = None

    @classmethod
    def of(cls, pool: Pool, shape: MatchShape, beta2: float, relax: Relaxation, max_matches: int) -> Forming:
        clashes = Clashes(pool.clashes if pool.clashes is not None else np.empty((0, 2), np.int64), len(pool))
        composition = shape.composition
        if composition is None:
            return cls(pool, shape, beta2, relax, max_matches, clashes)
        every = tuple(range(len(composition.roles)))
        # Looked up by identity first: a queue's pool shares one roles object among the tickets
        # that list the same roles (store.py decodes each distinct extension once), and hashing
        # nested tuples ten thousand times costs more than reading them. The pool keeps every
        # key alive meanwhile; equal lists held apart are read once by value.
        by_id: dict[tuple[int, int], tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]] = {}
        by_value: dict[
            tuple[TicketRoles | None, int], tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]
        ] = {}
        listed = pool.roles if pool.roles is not None else [None] * len(pool)
        sizes = pool.size.tolist()
        preferences, player_masks = [], []
        for roles, size in zip(listed, sizes, strict=True):
            found = by_id.get((id(roles), size))
            if found is None:
                found = by_value.get((roles, size))
                if found is None:
                    found = by_value[roles, size] = _read(composition, roles, size, every)
                by_id[id(roles), size] = found
            preferences.append(found[0])
            player_masks.append(found[1])
        masks = np.array([m[0] for m in player_masks], dtype=np.int64)
        return cls(pool, shape, beta2, relax, max_matches, clashes, preferences, player_masks, masks)

    def roles_of(self, match: Match, team_roles: list[list[int]]) -> tuple[tuple[str, ...], ...]:
        """Role names per row of the match, from a role index per player, team by team."""
        assert self.shape.composition is not None
        names = self.shape.composition.roles
        flat = iter([role for team in team_roles for role in team])
        return tuple(tuple(names[next(flat)] for _ in range(int(self.pool.size[row]))) for row in match.rows)


def _read(
    composition: Composition, roles: TicketRoles | None, size: int, every: tuple[int, ...]
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]]:
    if roles is None:
        full = (1 << len(every)) - 1
        return (every,) * size, (full,) * size
    preferences = tuple(composition.preferences(names) for names in roles)
    masks = tuple(sum(1 << role for role in player) for player in preferences)
    return preferences, masks
