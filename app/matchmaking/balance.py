"""Splitting a lobby into k teams with the highest match quality, parties kept together.

Quality is seed 000 eq. 7 (general form). For a split, it depends only on each team's
sums Σmu and Σ(sigma² + beta²), so a candidate split costs O(k) to score once the sums
are kept incrementally.

Exact for up to EXACT_LIMIT players: a depth-first search over the units (parties and
single players) that fills teams to their sizes, skipping splits that only relabel teams
of equal size. Above that, a heuristic: a snake draft of the units by strength, then hill
climbing over swaps of equal-sized units between teams, from several seeded starts
(the report in docs/evaluation.md measures it against the exact answer).
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
    """Teams as lists of player indices, and the quality of the split."""

    teams: list[list[int]]
    quality: float
    exact: bool


def team_sizes(players: int, teams: int) -> list[int]:
    """Sizes as equal as the count allows, larger teams first."""
    if teams < 2:
        raise RatingInputError("a lobby needs at least 2 teams")
    if players < teams:
        raise RatingInputError(f"{players} players cannot form {teams} teams")
    base, extra = divmod(players, teams)
    return [base + 1 if i < extra else base for i in range(teams)]


def _units(players: int, parties: Sequence[Sequence[int]]) -> list[list[int]]:
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


class _Scorer:
    """Quality from per-team sums: det ratio × exp(−½·scatter) (see app.rating.prediction)."""

    def __init__(self, ratings: Sequence[Rating], beta: float) -> None:
        beta2 = beta * beta
        self.mu = [r.mu for r in ratings]
        self.spread = [r.sigma * r.sigma + beta2 for r in ratings]
        self.beta2 = beta2

    def quality(self, means: Sequence[float], spreads: Sequence[float], sizes: Sequence[int]) -> float:
        noise = [self.beta2 * n for n in sizes]
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
    sizes = team_sizes(len(ratings), teams)
    units = _units(len(ratings), parties)
    biggest = max(len(u) for u in units)
    if biggest > sizes[0]:
        raise RatingInputError(f"a party of {biggest} does not fit in a team of {sizes[0]}")
    scorer = _Scorer(ratings, env.beta)
    if len(ratings) <= EXACT_LIMIT:
        found = _exact(units, sizes, scorer)
        if found is None:
            raise RatingInputError(f"the parties cannot be split into teams of sizes {sizes}")
        return found
    return _heuristic(units, sizes, scorer, random.Random(seed))


def _exact(units: list[list[int]], sizes: list[int], scorer: _Scorer) -> Split | None:
    # Big units first: the search fails fast on parties that do not fit.
    order = sorted(units, key=len, reverse=True)
    count = len(sizes)
    means = [0.0] * count
    spreads = [0.0] * count
    filled = [0] * count
    members: list[list[int]] = [[] for _ in range(count)]
    best: list[Split | None] = [None]

    def place(index: int) -> None:
        if index == len(order):
            quality = scorer.quality(means, spreads, sizes)
            if best[0] is None or quality > best[0].quality:
                best[0] = Split([list(m) for m in members], quality, exact=True)
            return
        unit = order[index]
        tried_empty: set[int] = set()
        for team in range(count):
            if filled[team] + len(unit) > sizes[team]:
                continue
            if filled[team] == 0:
                # Empty teams of the same size are interchangeable: try one of them.
                if sizes[team] in tried_empty:
                    continue
                tried_empty.add(sizes[team])
            filled[team] += len(unit)
            members[team].extend(unit)
            for player in unit:
                means[team] += scorer.mu[player]
                spreads[team] += scorer.spread[player]
            place(index + 1)
            for player in unit:
                means[team] -= scorer.mu[player]
                spreads[team] -= scorer.spread[player]
            del members[team][-len(unit) :]
            filled[team] -= len(unit)

    place(0)
    return best[0]


def _snake(
    units: list[list[int]], sizes: list[int], scorer: _Scorer, rng: random.Random, shuffle: bool
) -> list[list[list[int]]] | None:
    order = sorted(units, key=lambda u: (-len(u), -sum(scorer.mu[p] for p in u)))
    if shuffle:
        rng.shuffle(order)
        order.sort(key=len, reverse=True)
    assignment: list[list[list[int]]] = [[] for _ in sizes]
    filled = [0] * len(sizes)
    direction, team = 1, 0
    for unit in order:
        for _ in range(2 * len(sizes)):
            if filled[team] + len(unit) <= sizes[team]:
                break
            team += direction
            if team in (-1, len(sizes)):
                direction = -direction
                team += direction
        else:
            return None
        if filled[team] + len(unit) > sizes[team]:
            return None
        assignment[team].append(unit)
        filled[team] += len(unit)
        team += direction
        if team in (-1, len(sizes)):
            direction = -direction
            team += direction
    return assignment


def _heuristic(units: list[list[int]], sizes: list[int], scorer: _Scorer, rng: random.Random) -> Split:
    best: Split | None = None
    for attempt in range(RESTARTS):
        assignment = _snake(units, sizes, scorer, rng, shuffle=attempt > 0)
        if assignment is None:
            continue
        means = [sum(scorer.mu[p] for u in t for p in u) for t in assignment]
        spreads = [sum(scorer.spread[p] for u in t for p in u) for t in assignment]
        quality = scorer.quality(means, spreads, sizes)
        improved = True
        while improved:
            improved = False
            for a in range(len(sizes)):
                for b in range(a + 1, len(sizes)):
                    for i, unit_a in enumerate(assignment[a]):
                        for j, unit_b in enumerate(assignment[b]):
                            if len(unit_a) != len(unit_b):
                                continue
                            d_mu = sum(scorer.mu[p] for p in unit_b) - sum(scorer.mu[p] for p in unit_a)
                            d_sp = sum(scorer.spread[p] for p in unit_b) - sum(
                                scorer.spread[p] for p in unit_a
                            )
                            means[a] += d_mu
                            means[b] -= d_mu
                            spreads[a] += d_sp
                            spreads[b] -= d_sp
                            candidate = scorer.quality(means, spreads, sizes)
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
            best = Split([[p for u in t for p in u] for t in assignment], quality, exact=False)
    if best is None:
        raise RatingInputError(f"the parties cannot be split into teams of sizes {sizes}")
    return best
