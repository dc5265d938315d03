"""Forming matches from waiting tickets: candidates from skill neighbours, ranked by quality.

A ticket is one player or a party. Tickets may share a match only when their attributes
(region, …) are equal. Within such a pool, tickets are sorted by mean skill and candidate
matches are built from neighbours in that order: pairs within a small window for 1v1, and
runs of consecutive tickets that exactly fill the shape (teams × team_size) otherwise,
split into teams by `balance`. Candidates are ranked by draw quality (seed 000 eq. 7) and
taken greedily without overlap, each only if its quality clears the threshold, which
relaxes linearly from `start` to `floor` over `relax_seconds` of the longest wait in it.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app.matchmaking.balance import balance
from app.rating import Rating, RatingInputError, TrueSkill

NEIGHBOURS = 8


@dataclass(frozen=True, slots=True)
class Ticket:
    ticket_id: str
    players: tuple[str, ...]
    ratings: tuple[Rating, ...]
    attributes: str  # canonical JSON: equal strings may share a match
    waited: float  # seconds

    @property
    def skill(self) -> float:
        return sum(r.mu for r in self.ratings) / len(self.ratings)


@dataclass(frozen=True, slots=True)
class Relaxation:
    """The quality a match must reach, as a function of its longest wait."""

    start: float = 0.4
    floor: float = 0.05
    seconds: float = 60.0

    def threshold(self, waited: float) -> float:
        if self.seconds <= 0 or waited >= self.seconds:
            return self.floor
        return self.start + (self.floor - self.start) * waited / self.seconds


@dataclass(frozen=True, slots=True)
class Proposal:
    ticket_ids: tuple[str, ...]
    teams: tuple[tuple[str, ...], ...]
    quality: float
    longest_wait: float


def canonical_attributes(attributes: Mapping[str, object]) -> str:
    return json.dumps(attributes, sort_keys=True, separators=(",", ":"))


def propose(
    tickets: Sequence[Ticket], teams: int, team_size: int, env: TrueSkill, relax: Relaxation, max_matches: int
) -> list[Proposal]:
    """The best non-overlapping matches among `tickets`, at most `max_matches`."""
    pools: dict[str, list[Ticket]] = defaultdict(list)
    for ticket in tickets:
        if len(ticket.players) <= team_size:
            pools[ticket.attributes].append(ticket)
    candidates: list[Proposal] = []
    for pool in pools.values():
        pool.sort(key=lambda t: (t.skill, t.ticket_id))
        if team_size == 1 and teams == 2:
            candidates.extend(_pairs(pool, env, relax))
        else:
            candidates.extend(_runs(pool, teams, team_size, env, relax, keep=4 * max_matches))
    candidates.sort(key=lambda p: (-p.quality, p.ticket_ids))
    taken: set[str] = set()
    chosen: list[Proposal] = []
    for candidate in candidates:
        if len(chosen) >= max_matches:
            break
        if taken.isdisjoint(candidate.ticket_ids):
            chosen.append(candidate)
            taken.update(candidate.ticket_ids)
    if team_size == 1 and teams == 2:
        by_id = {t.ticket_id: t for t in tickets}
        # Tickets whose neighbours were all taken may still pair with each other.
        for pool in pools.values():
            left = [t for t in pool if t.ticket_id not in taken]
            for a, b in zip(left[::2], left[1::2], strict=False):
                if len(chosen) >= max_matches:
                    break
                pair = _pair(a, b, env)
                if pair.quality >= relax.threshold(pair.longest_wait):
                    chosen.append(pair)
                    taken.update(pair.ticket_ids)
        chosen = _repair_pairs(chosen, by_id, env, relax)
    return chosen


def _repair_pairs(
    chosen: list[Proposal], tickets: dict[str, Ticket], env: TrueSkill, relax: Relaxation
) -> list[Proposal]:
    """2-opt on greedy pairs: re-pair two nearby matches when that raises total quality.

    Greedy by quality is a 1/2-approximation of the maximum-weight matching; exchanging
    partners between matches close in skill recovers most of the gap cheaply.
    """
    pairs = sorted(chosen, key=lambda p: sum(tickets[t].skill for t in p.ticket_ids))
    for _ in range(3):
        improved = False
        for i in range(len(pairs)):
            for j in range(i + 1, min(i + 4, len(pairs))):
                (a, b), (c, d) = pairs[i].ticket_ids, pairs[j].ticket_ids
                current = pairs[i].quality + pairs[j].quality
                for x, y, u, w in ((a, c, b, d), (a, d, b, c)):
                    first, second = _pair(tickets[x], tickets[y], env), _pair(tickets[u], tickets[w], env)
                    if (
                        first.quality + second.quality > current * (1 + 1e-12)
                        and first.quality >= relax.threshold(first.longest_wait)
                        and second.quality >= relax.threshold(second.longest_wait)
                    ):
                        pairs[i], pairs[j] = first, second
                        current = first.quality + second.quality
                        (a, b), (c, d) = pairs[i].ticket_ids, pairs[j].ticket_ids
                        improved = True
        if not improved:
            break
    return sorted(pairs, key=lambda p: (-p.quality, p.ticket_ids))


def _pair(a: Ticket, b: Ticket, env: TrueSkill) -> Proposal:
    return Proposal(
        (a.ticket_id, b.ticket_id),
        ((a.players[0],), (b.players[0],)),
        quality_1vs1(a.ratings[0], b.ratings[0], env.beta),
        max(a.waited, b.waited),
    )


def quality_1vs1(a: Rating, b: Rating, beta: float) -> float:
    """Seed 000 eq. 7 for two players: sqrt(2β²/c²)·exp(−(μa − μb)²/(2c²)), c² = 2β² + σa² + σb²."""
    two_beta2 = 2.0 * beta * beta
    c2 = two_beta2 + a.sigma * a.sigma + b.sigma * b.sigma
    delta = a.mu - b.mu
    return math.sqrt(two_beta2 / c2) * math.exp(-delta * delta / (2.0 * c2))


def _pairs(pool: list[Ticket], env: TrueSkill, relax: Relaxation) -> list[Proposal]:
    out = []
    for i, a in enumerate(pool):
        for b in pool[i + 1 : i + 1 + NEIGHBOURS]:
            pair = _pair(a, b, env)
            if pair.quality >= relax.threshold(pair.longest_wait):
                out.append(pair)
    return out


def _runs(
    pool: list[Ticket], teams: int, team_size: int, env: TrueSkill, relax: Relaxation, keep: int
) -> list[Proposal]:
    """Runs of consecutive tickets (by skill) that fill the shape exactly.

    Every run is scored with a snake-draft split (O(players)); the best non-overlapping
    `keep` runs by that score are then balanced exactly, which is what a proposal carries.
    """
    needed = teams * team_size
    runs: list[tuple[float, list[Ticket]]] = []
    for start in range(len(pool)):
        run: list[Ticket] = []
        count = 0
        for ticket in pool[start:]:
            if count + len(ticket.players) > needed:
                continue  # a party that overflows: look further along for smaller tickets
            run.append(ticket)
            count += len(ticket.players)
            if count == needed or len(run) > 2 * needed:
                break
        if count == needed:
            runs.append((_snake_quality(run, teams, env), run))
    runs.sort(key=lambda r: -r[0])
    picked: list[list[Ticket]] = []
    used: set[str] = set()
    for _, run in runs:
        if len(picked) >= keep:
            break
        ids = {t.ticket_id for t in run}
        if used.isdisjoint(ids):
            picked.append(run)
            used |= ids
    out = []
    for run in picked:
        proposal = _balanced(run, teams, env)
        if proposal is not None and proposal.quality >= relax.threshold(proposal.longest_wait):
            out.append(proposal)
    return out


def _snake_quality(run: list[Ticket], teams: int, env: TrueSkill) -> float:
    """Quality of a quick split: players by skill dealt to teams in snake order."""
    ratings = sorted((r for t in run for r in t.ratings), key=lambda r: -r.mu)
    groups: list[list[Rating]] = [[] for _ in range(teams)]
    for index, rating in enumerate(ratings):
        lap, seat = divmod(index, teams)
        groups[seat if lap % 2 == 0 else teams - 1 - seat].append(rating)
    return env.quality(groups)


def _balanced(run: list[Ticket], teams: int, env: TrueSkill) -> Proposal | None:
    players = [p for t in run for p in t.players]
    ratings = [r for t in run for r in t.ratings]
    parties, index = [], 0
    for ticket in run:
        if len(ticket.players) > 1:
            parties.append(list(range(index, index + len(ticket.players))))
        index += len(ticket.players)
    try:
        split = balance(ratings, teams, parties, env)
    except RatingInputError:
        return None
    return Proposal(
        tuple(t.ticket_id for t in run),
        tuple(tuple(players[i] for i in team) for team in split.teams),
        split.quality,
        max(t.waited for t in run),
    )
