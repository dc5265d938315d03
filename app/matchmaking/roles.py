"""Roles: a composition every team of a match must meet, and whether players can meet it.

A mode may set a composition per team, such as {"tank": 1, "healer": 1, "damage": 3}; each
player lists the roles they accept. Players accept roles as a bitmask over the composition's
roles (bit r for role r). Whether a team can be assigned is a bipartite matching of players to
slots, decided by Hall's condition (Hall 1935) from the players' side: for every set S of
roles, the players who accept nothing outside S are at most the slots of S. With as many
players as slots that is a full assignment; with fewer, the team can still be completed by
players who fill the slots left. A composition has at most MAX_ROLES roles, so a check
enumerates at most 2^MAX_ROLES sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.matchmaking.pool import IntArray

MAX_ROLES = 8
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Composition:
    """The roles of a team and how many players take each."""

    roles: tuple[str, ...]
    counts: tuple[int, ...]
    # Per set of roles (a bitmask): its slots in one team.
    caps: tuple[int, ...] = field(init=False)
    _index: dict[str, int] = field(init=False)
    # Per mask: the sets of roles that hold all of it (where a player of that mask counts).
    _supersets: tuple[tuple[int, ...], ...] = field(init=False)

    def __post_init__(self) -> None:
        if not 1 <= len(self.roles) <= MAX_ROLES:
            raise ValueError(f"a composition has 1 to {MAX_ROLES} roles, not {len(self.roles)}")
        if len(set(self.roles)) != len(self.roles) or len(self.counts) != len(self.roles):
            raise ValueError("a composition names each role once, with its count")
        if any(count < 1 for count in self.counts):
            raise ValueError("each role of a composition takes at least one player")
        caps = [0] * (1 << len(self.roles))
        for subset in range(1, len(caps)):
            low = subset & -subset
            caps[subset] = caps[subset ^ low] + self.counts[low.bit_length() - 1]
        object.__setattr__(self, "caps", tuple(caps))
        object.__setattr__(self, "_index", {role: number for number, role in enumerate(self.roles)})
        sets = range(len(caps))
        object.__setattr__(self, "_supersets", tuple(tuple(s for s in sets if s & m == m) for m in sets))

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> Composition:
        return cls(tuple(counts), tuple(counts.values()))

    @property
    def team_size(self) -> int:
        return sum(self.counts)

    @property
    def subsets(self) -> int:
        return len(self.caps)

    def preferences(self, names: Iterable[str]) -> tuple[int, ...]:
        """The composition's roles among `names`, in the player's order (others are ignored)."""
        return tuple(dict.fromkeys(self._index[name] for name in names if name in self._index))

    def mask(self, names: Iterable[str]) -> int:
        result = 0
        for role in self.preferences(names):
            result |= 1 << role
        return result

    def fits(self, masks: Iterable[int], teams: int = 1) -> bool:
        """Whether these players can all be seated in `teams` teams' slots (Hall's condition
        from the players' side): never true of a player who accepts no role."""
        return self.admit([0] * self.subsets, masks, teams)

    def admit(self, within: list[int], masks: Iterable[int], teams: int = 1) -> bool:
        """Whether players of these masks can join those counted in `within` (per set of roles,
        the players seated so far who accept nothing outside it) in `teams` teams' slots; if
        so, they are counted in. A window grows by this, one ticket at a time."""
        if isinstance(masks, tuple) and len(masks) == 1:
            # One player (most tickets): each set holding their mask gains one, no tally needed.
            supersets, caps = self._supersets[masks[0]], self.caps
            for subset in supersets:
                if within[subset] >= teams * caps[subset]:
                    return False
            for subset in supersets:
                within[subset] += 1
            return True
        added: dict[int, int] = {}
        for mask in masks:
            for subset in self._supersets[mask]:
                added[subset] = added.get(subset, 0) + 1
        if any(within[subset] + count > teams * self.caps[subset] for subset, count in added.items()):
            return False
        for subset, count in added.items():
            within[subset] += count
        return True

    def inside(self, masks: IntArray) -> BoolArray:
        """Per player (any leading shape) and set of roles S: whether the player accepts
        nothing outside S. Shape: masks.shape + (subsets,)."""
        sets = np.arange(self.subsets, dtype=np.int64)
        result: BoolArray = (masks[..., None] & ~sets) == 0
        return result

    def assign(self, preferences: Sequence[Sequence[int]], teams: int = 1) -> list[int] | None:
        """A role per player so that no role takes more players than its slots in `teams`
        teams (Kuhn's augmenting paths, each player's roles tried in their order); None when
        there is none."""
        slots_of: list[list[int]] = []
        for count in self.counts:
            first = sum(len(slots) for slots in slots_of)
            slots_of.append(list(range(first, first + teams * count)))
        holder = [-1] * sum(len(slots) for slots in slots_of)

        def seat(player: int, seen: set[int]) -> bool:
            for role in preferences[player]:
                for slot in slots_of[role]:
                    if slot in seen:
                        continue
                    seen.add(slot)
                    if holder[slot] == -1 or seat(holder[slot], seen):
                        holder[slot] = player
                        return True
            return False

        for player in range(len(preferences)):
            if not seat(player, set()):
                return None
        role_of = [-1] * len(preferences)
        for role, slots in enumerate(slots_of):
            for slot in slots:
                if holder[slot] != -1:
                    role_of[holder[slot]] = role
        return role_of
