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
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from app.rating import Rating, RatingInputError, TrueSkill

EXACT_LIMIT = 12
RESTARTS = 8


@dataclass(frozen=True, slots=True)
class Split:
    """Teams as lists of indices (players for `balance`, units for `split_units`), and the
    quality of the split."""

    teams: list[list[int]]
    quality: float
    exact: bool


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
) -> Split:
    """The highest-quality split of `ratings` into `teams` teams of equal size (as equal as
    the count allows), keeping each party on one team."""
    env = env or TrueSkill()
    beta2 = env.beta * env.beta
    units, members = units_of(ratings, parties, beta2)
    split = split_units(units, teams, beta2, seed=seed)
    return Split([[p for u in team for p in members[u]] for team in split.teams], split.quality, split.exact)


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


def split_units(units: Units, teams: int, beta2: float, *, seed: int = 0) -> Split:
    """The highest-quality split of the units into `teams` teams of equal size (as equal as
    the count allows); teams are lists of unit indices."""
    sizes = team_sizes(sum(units.size), teams)
    biggest = max(units.size)
    if biggest > sizes[0]:
        raise RatingInputError(f"a party of {biggest} does not fit in a team of {sizes[0]}")
    if sum(units.size) <= EXACT_LIMIT:
        found = _exact(units, sizes, beta2)
        if found is None:
            raise RatingInputError(f"the parties cannot be split into teams of sizes {sizes}")
        return found
    return _heuristic(units, sizes, beta2, random.Random(seed))


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


def _exact(units: Units, sizes: list[int], beta2: float) -> Split | None:
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


def _heuristic(units: Units, sizes: list[int], beta2: float, rng: random.Random) -> Split:
    best: Split | None = None
    for attempt in range(RESTARTS):
        assignment = _snake(units, sizes, rng, shuffle=attempt > 0)
        if assignment is None:
            continue
        means = [sum(units.mu[u] for u in t) for t in assignment]
        spreads = [sum(units.spread[u] for u in t) for t in assignment]
        quality = split_quality(means, spreads, sizes, beta2)
        improved = True
        while improved:
            improved = False
            for a in range(len(sizes)):
                for b in range(a + 1, len(sizes)):
                    for i, unit_a in enumerate(assignment[a]):
                        for j, unit_b in enumerate(assignment[b]):
                            if units.size[unit_a] != units.size[unit_b]:
                                continue
                            d_mu = units.mu[unit_b] - units.mu[unit_a]
                            d_sp = units.spread[unit_b] - units.spread[unit_a]
                            means[a] += d_mu
                            means[b] -= d_mu
                            spreads[a] += d_sp
                            spreads[b] -= d_sp
                            candidate = split_quality(means, spreads, sizes, beta2)
                            if candidate > quality * (1 + 1e-12):
                                assignment[a][i], assignment[b][j] = unit_b, unit_a
                                quality = candidate
                                improved = True
                                unit_a = unit_b
                            else:
                                means[a] -= d_mu
                                means[b] += d_mu
                                spreads[a] -= d_sp
                                spreads[b] += d_sp
        if best is None or quality > best.quality:
            best = Split([list(t) for t in assignment], quality, exact=False)
    if best is None:
        raise RatingInputError(f"the parties cannot be split into teams of sizes {sizes}")
    return best
