"""Building one candidate match from tickets in skill order: who may join, and its best split.

`gather` walks a list from a start, admitting each ticket that fits beside those taken (a ticket
that would overflow the match, that the composition cannot seat, or that clashes with one taken
is skipped, and the walk looks further along). `balanced_match` splits the tickets into their
best teams (balance.py, under the composition when there is one) and keeps the match if it
clears the threshold of its longest wait. windows.py walks parties' windows with them, and
smaller.py the smaller matches long waits allow.
"""

from __future__ import annotations

from app.matchmaking.balance import Units, split_units
from app.matchmaking.forming import Forming
from app.matchmaking.pool import IntArray, Match
from app.matchmaking.seating import UnitRoles
from app.rating import RatingInputError


def gather(forming: Forming, rows: IntArray, start: int, needed: int, teams: int, within: int) -> list[int]:
    """Positions from `start` on (at most `within` further) whose tickets fill `needed` players,
    each admitted in turn (a ticket that would overflow, that the composition cannot seat
    beside those taken, or that clashes with one of them, is skipped); empty when they do not
    fill it."""
    pool = forming.pool
    composition = forming.shape.composition
    masks = forming.player_masks
    seated = [0] * composition.subsets if composition is not None else []
    window: list[int] = []
    members: list[int] = []
    count = 0
    for k in range(start, min(len(rows), start + within)):
        row = int(rows[k])
        size = int(pool.size[row])
        if count + size > needed:
            continue  # a ticket that does not fit: look further along for others
        if forming.clashes and members and forming.clashes.within([*members, row]):
            continue
        if composition is not None and masks is not None and not composition.admit(seated, masks[row], teams):
            continue
        window.append(k)
        members.append(row)
        count += size
        if count == needed:
            return window
    return []


def balanced_match(forming: Forming, window: IntArray, teams: int) -> Match | None:
    """The window's tickets split into their best teams (balance.split_units), if the split
    clears the threshold of its longest wait."""
    pool = forming.pool
    units = Units(
        pool.mu[window].tolist(),
        (pool.var[window] + pool.size[window] * forming.beta2).tolist(),
        pool.size[window].tolist(),
    )
    seating = None
    composition = forming.shape.composition
    if composition is not None and forming.player_masks is not None and forming.preferences is not None:
        members = window.tolist()
        seating = UnitRoles(
            composition, [forming.player_masks[r] for r in members], [forming.preferences[r] for r in members]
        )
    try:
        split = split_units(units, teams, forming.beta2, roles=seating)
    except RatingInputError:
        return None
    longest = float(pool.waited[window].max())
    if split.quality < forming.relax.threshold(longest):
        return None
    match = Match(tuple(tuple(int(window[u]) for u in team) for team in split.teams), split.quality, longest)
    if split.roles is None:
        return match
    return Match(match.teams, match.quality, longest, roles=forming.roles_of(match, split.roles))
