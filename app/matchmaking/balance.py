"""Splitting a lobby into k teams with the highest match quality, parties kept together.

Quality is seed 000 eq. 7 (general form). For a split, it depends only on each team's
sums Σmu and Σ(sigma² + beta²), so the search works on units (a party, or a player on
their own) described by those sums and their size, and a candidate split costs O(k) to
score once the sums are kept incrementally.

Exact for up to EXACT_LIMIT players: a depth-first search over the units that fills teams
to their sizes, skipping splits that only relabel teams of equal size. Above that, a
heuristic: a snake draft of the units by strength, then hill climbing over swaps of
equal-sized units between teams, from several seeded starts (the report in
docs/evaluation.md measures it against the exact answer).

Under a composition (roles.py) both keep every team able to seat its players in roles: the
search prunes a team its players could no longer fill (seating.UnitRoles.fits), the
heuristic starts from a valid seating (seating.first_seating) and swaps only where both
teams stay valid. The split then names each player's role.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from app.matchmaking.climbing import climb
from app.matchmaking.roles import Composition
from app.matchmaking.seating import UnitRoles, first_seating
from app.rating import Rating, RatingInputError, TrueSkill

EXACT_LIMIT = 12
RESTARTS = 8
# Above this many teams, two starts: each climb already weighs every swap of every pair of teams.
MANY_TEAMS = 8


@dataclass(frozen=True, slots=True)
class Split:
    """Teams as lists of indices (players for `balance`, units for `split_units`), and the
    quality of the split."""

    teams: list[list[int]]
    quality: float
    exact: bool
    # Under a composition: per team, the role (an index into its roles) of each player, in the
    # order of the team's units and their members.
    roles: list[list[int]] | None = None


@dataclass(frozen=True, slots=True)
class Units:
    """Per unit (a party, or one player): Σ mu, Σ (sigma² + beta²) and the number of players."""

    mu: Sequence[float]
    spread: Sequence[float]
    size: Sequence[int]


def team_sizes(players: int, teams: int) -> list[int]:
    """Sizes as equal as the count allows, larger teams first."""
    if teams < 2:
        raise RatingInputError("a lobby needs at least 2 teams")
    if players < teams:
        raise RatingInputError(f"{players} players cannot form {teams} teams")
    base, extra = divmod(players, teams)
    return [base + 1 if i < extra else base for i in range(teams)]


def _members(players: int, parties: Sequence[Sequence[int]]) -> list[list[int]]:
    """Parties, then every player not in a party on their own."""
    seen: set[int] = set()
    units: list[list[int]] = []
    for party in parties:
        members = list(party)
        for member in members:
            if not 0 <= member < players:
                raise RatingInputError(f"party member {member} is not in the lobby")
            if member in seen:
                raise RatingInputError(f"player {member} is in two parties (or twice in one)")
            seen.add(member)
        if members:
            units.append(members)
    units.extend([i] for i in range(players) if i not in seen)
    return units


def split_quality(
    means: Sequence[float], spreads: Sequence[float], sizes: Sequence[int], beta2: float
) -> float:
    """Eq. 7 from per-team sums: det ratio × exp(−½·scatter) (see app.rating.prediction)."""
    noise = [beta2 * n for n in sizes]
    # det(BᵀDB) = Π D · Σ 1/D for the path-difference matrix B; take the ratio in logs.
    log_ratio = sum(math.log(n) for n in noise) + math.log(sum(1.0 / n for n in noise))
    log_ratio -= sum(math.log(d) for d in spreads) + math.log(sum(1.0 / d for d in spreads))
    inverse = sum(1.0 / d for d in spreads)
    centre = sum(m / d for m, d in zip(means, spreads, strict=True)) / inverse
    scatter = sum((m - centre) ** 2 / d for m, d in zip(means, spreads, strict=True))
    return math.exp(0.5 * log_ratio - 0.5 * scatter)


def balance(
    ratings: Sequence[Rating],
    teams: int,
    parties: Sequence[Sequence[int]] = (),
    env: TrueSkill | None = None,
    *,
    seed: int = 0,
    roles: Sequence[Sequence[str]] | None = None,
    composition: Composition | None = None,
) -> Split:
    """The highest-quality split of `ratings` into `teams` teams of equal size (as equal as
    the count allows), keeping each party on one team. With a composition, `roles` lists the
    roles each player accepts, and every team must seat its players in the composition."""
    env = env or TrueSkill()
    beta2 = env.beta * env.beta
    units, members = units_of(ratings, parties, beta2)
    seating = None
    if composition is not None:
        if roles is None or len(roles) != len(ratings):
            raise RatingInputError("a composition needs the roles of every player")
        if len(ratings) != teams * composition.team_size:
            size = composition.team_size
            raise RatingInputError(f"{len(ratings)} players cannot fill {teams} teams of {size} (the roles)")
        preferences = [composition.preferences(names) for names in roles]
        seating = UnitRoles(
            composition,
            [tuple(sum(1 << r for r in preferences[p]) for p in unit) for unit in members],
            [tuple(preferences[p] for p in unit) for unit in members],
        )
    split = split_units(units, teams, beta2, seed=seed, roles=seating)
    return Split(
        [[p for u in team for p in members[u]] for team in split.teams],
        split.quality,
        split.exact,
        split.roles,
    )


def units_of(
    ratings: Sequence[Rating], parties: Sequence[Sequence[int]], beta2: float
) -> tuple[Units, list[list[int]]]:
    """The units of a lobby (its parties, then everyone else alone) and their players."""
    members = _members(len(ratings), parties)
    units = Units(
        [sum(ratings[p].mu for p in unit) for unit in members],
        [sum(ratings[p].sigma ** 2 + beta2 for p in unit) for unit in members],
        [len(unit) for unit in members],
    )
    return units, members


def split_units(
    units: Units, teams: int, beta2: float, *, seed: int = 0, roles: UnitRoles | None = None
) -> Split:
    """The highest-quality split of the units into `teams` teams of equal size (as equal as
    the count allows); teams are lists of unit indices. With roles, only splits whose every
    team seats its players in the composition count (RatingInputError when there is none)."""
    sizes = team_sizes(sum(units.size), teams)
    biggest = max(units.size)
    if biggest > sizes[0]:
        raise RatingInputError(f"a party of {biggest} does not fit in a team of {sizes[0]}")
    if sum(units.size) <= EXACT_LIMIT:
        found = _exact(units, sizes, beta2, roles)
        if found is None:
            reason = "the roles cannot be met in" if roles is not None else "the parties cannot be split into"
            raise RatingInputError(f"{reason} teams of sizes {sizes}")
    else:
        found = _heuristic(units, sizes, beta2, random.Random(seed), roles)
    if roles is None:
        return found
    seated = [roles.assign(team) for team in found.teams]
    assert all(team is not None for team in seated)  # every team passed Hall's condition
    return Split(found.teams, found.quality, found.exact, [team for team in seated if team is not None])


def snake_quality(units: Units, teams: int, beta2: float) -> float | None:
    """The quality of a snake draft of the units by strength (the heuristic's first split): a
    cheap estimate for ranking lobbies; None where the draft cannot seat the parties."""
    sizes = team_sizes(sum(units.size), teams)
    assignment = _snake(units, sizes, random.Random(0), shuffle=False)
    if assignment is None:
        return None
    means = [sum(units.mu[u] for u in t) for t in assignment]
    spreads = [sum(units.spread[u] for u in t) for t in assignment]
    return split_quality(means, spreads, sizes, beta2)


def _exact(units: Units, sizes: list[int], beta2: float, roles: UnitRoles | None = None) -> Split | None:
    # Big units first: the search fails fast on parties that do not fit.
    order = sorted(range(len(units.size)), key=lambda u: units.size[u], reverse=True)
    count = len(sizes)
    means = [0.0] * count
    spreads = [0.0] * count
    filled = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    best: list[Split | None] = [None]

    def place(index: int) -> None:
        if index == len(order):
            quality = split_quality(means, spreads, sizes, beta2)
            if best[0] is None or quality > best[0].quality:
                best[0] = Split([list(m) for m in members], quality, exact=True)
            return
        unit = order[index]
        size = units.size[unit]
        tried_empty: set[int] = set()
        for team in range(count):
            if filled[team] + size > sizes[team]:
                continue
            if roles is not None and not roles.fits([*members[team], unit]):
                continue
            if filled[team] == 0:
                # Empty teams of the same size are interchangeable: try one of them.
                if sizes[team] in tried_empty:
                    continue
                tried_empty.add(sizes[team])
            filled[team] += size
            members[team].append(unit)
            means[team] += units.mu[unit]
            spreads[team] += units.spread[unit]
            place(index + 1)
            means[team] -= units.mu[unit]
            spreads[team] -= units.spread[unit]
            members[team].pop()
            filled[team] -= size

    place(0)
    return best[0]


def _snake(units: Units, sizes: list[int], rng: random.Random, shuffle: bool) -> list[list[int]] | None:
    order = sorted(range(len(units.size)), key=lambda u: (-units.size[u], -units.mu[u]))
    if shuffle:
        rng.shuffle(order)
        order.sort(key=lambda u: units.size[u], reverse=True)
    assignment: list[list[int]] = [[] for _ in sizes]
    filled = [0] * len(sizes)
    direction, team = 1, 0
    for unit in order:
        size = units.size[unit]
        for _ in range(2 * len(sizes)):
            if filled[team] + size <= sizes[team]:
                break
            team += direction
            if team in (-1, len(sizes)):
                direction = -direction
                team += direction
        else:
            return None
        if filled[team] + size > sizes[team]:
            return None
        assignment[team].append(unit)
        filled[team] += size
        team += direction
        if team in (-1, len(sizes)):
            direction = -direction
            team += direction
    return assignment


def _heuristic(
    units: Units, sizes: list[int], beta2: float, rng: random.Random, roles: UnitRoles | None = None
) -> Split:
    best: Split | None = None
    restarts = RESTARTS if len(sizes) <= MANY_TEAMS else 2
    for attempt in range(restarts):
        if roles is None:
            assignment = _snake(units, sizes, rng, shuffle=attempt > 0)
        else:
            assignment = first_seating(roles, units.mu, units.size, len(sizes), rng, shuffle=attempt > 0)
        if assignment is None:
            continue
        assignment = climb(units.mu, units.spread, units.size, assignment, roles)
        means = [sum(units.mu[u] for u in t) for t in assignment]
        spreads = [sum(units.spread[u] for u in t) for t in assignment]
        quality = split_quality(means, spreads, sizes, beta2)
        if best is None or quality > best.quality or (quality == best.quality == 0.0):
            best = Split([list(t) for t in assignment], quality, exact=False)
    if best is None:
        reason = "the roles cannot be met in" if roles is not None else "the parties cannot be split into"
        raise RatingInputError(f"{reason} teams of sizes {sizes}")
    return best
