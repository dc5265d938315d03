"""Seating units (a party, or one player) in teams under a composition, for balance.py.

Each team must end with exactly the composition's slots filled, every player in a role they
accept. The split search (balance.py) prunes with `fits`, Hall's condition on a team's
players so far (roles.py). Its heuristic starts from `first_seating`: parties first, each in
the team whose slots it fits best, then the players on their own, given roles by a transport
over the slots left (allocation.py) and dealt to the teams by a snake draft within each role,
so every team starts valid and about as strong as the others.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from app.matchmaking.allocation import transport
from app.matchmaking.roles import Composition


@dataclass(frozen=True, slots=True)
class UnitRoles:
    """Per unit, per player: accepted roles as a bitmask and in order of preference."""

    composition: Composition
    masks: Sequence[tuple[int, ...]]
    preferences: Sequence[tuple[tuple[int, ...], ...]]

    def fits(self, team: Sequence[int]) -> bool:
        """Whether the units of a team so far can all take roles in it."""
        return self.composition.fits([mask for unit in team for mask in self.masks[unit]])

    def assign(self, team: Sequence[int]) -> list[int] | None:
        """A role per player of the team, units in order; None when there is none."""
        return self.composition.assign([p for unit in team for p in self.preferences[unit]])


def first_seating(
    roles: UnitRoles,
    strength: Sequence[float],
    size: Sequence[int],
    teams: int,
    rng: random.Random,
    shuffle: bool,
) -> list[list[int]] | None:
    """A valid seating of every unit in `teams` teams of the composition's size, or None when
    this construction finds none."""
    composition = roles.composition
    capacity = composition.team_size
    seated: list[list[int]] = [[] for _ in range(teams)]
    filled = [0] * teams
    parties = [u for u in range(len(size)) if size[u] > 1]
    solos = [u for u in range(len(size)) if size[u] == 1]
    parties.sort(key=lambda u: (-size[u], -strength[u]))
    if shuffle:
        rng.shuffle(parties)
        parties.sort(key=lambda u: -size[u])
    power = [0.0] * teams
    for unit in parties:
        # The weakest team that has room and whose slots the party fits.
        for team in sorted(range(teams), key=lambda t: (power[t], t)):
            if filled[team] + size[unit] <= capacity and roles.fits([*seated[team], unit]):
                seated[team].append(unit)
                filled[team] += size[unit]
                power[team] += strength[unit]
                break
        else:
            return None
    # The slots each team has left per role, once its parties' players took theirs.
    left = [list(composition.counts) for _ in range(teams)]
    for team in range(teams):
        taken = roles.assign(seated[team])
        if taken is None:
            return None
        for role in taken:
            left[team][role] -= 1
    demand = [sum(left[t][r] for t in range(teams)) for r in range(len(composition.roles))]
    by_mask: dict[int, list[int]] = {}
    for unit in solos:
        by_mask.setdefault(roles.masks[unit][0], []).append(unit)
    kinds = list(by_mask)
    shares = transport(kinds, [len(by_mask[k]) for k in kinds], demand)
    if shares is None or sum(map(sum, shares)) != len(solos):
        return None
    role_of: dict[int, int] = {}
    for kind, share in zip(kinds, shares, strict=True):
        units = sorted(by_mask[kind], key=lambda u: -strength[u])
        if shuffle:
            rng.shuffle(units)
        at = 0
        for role, count in enumerate(share):
            for unit in units[at : at + count]:
                role_of[unit] = role
            at += count
    for role in range(len(composition.roles)):
        # A snake within the role: strongest first, to the team with the most slots left.
        for unit in sorted((u for u in solos if role_of[u] == role), key=lambda u: -strength[u]):
            open_teams = [t for t in range(teams) if left[t][role] > 0]
            team = min(open_teams, key=lambda t: (power[t], t))
            seated[team].append(unit)
            left[team][role] -= 1
            power[team] += strength[unit]
    return seated
