"""Forming matches from waiting tickets: the constraints in force, then candidates by skill.

A ticket is one player or a party. Tickets may share a match only when their attributes
(region, …) are equal: their group. Within a group, tickets are sorted by mean skill, and each
matcher builds candidates from neighbours in that order: pairs for 1v1 (pairs.py), windows
that fill the shape, split into teams, otherwise (windows.py), and runs cut from each role
under a composition (role_matches.py). Each candidate is scored by draw quality (seed 000 eq. 7)
and kept only if it clears the threshold of its longest wait, which relaxes linearly from
`start` to `floor` over `relax_seconds`; a mode whose matches may shrink accepts smaller ones
as the wait grows (shape.py). No match holds two tickets that avoid each other (avoid.py).

Under a latency rule (latency.py) a match must also share a region where every ticket is within
the limit in force. The tickets are shared out among the regions first, tightest limit first
(regions.py), and each region's share is matched on its own; each match is then named for its
best region.

The queue's proposals rank by TrueSkill's sum: quality does not change when every team's
coefficients are scaled alike, so this is exact for every team function except
size-penalised teams above their cap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.matchmaking.exchange import exchange
from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.latency import LatencyRule, regions_of
from app.matchmaking.pairs import pair_matches
from app.matchmaking.pool import IntArray, Match, Pool, Ticket, canonical_attributes, unmatched
from app.matchmaking.quality import Relaxation
from app.matchmaking.regions import share, tiers
from app.matchmaking.role_matches import role_matches
from app.matchmaking.roles import Composition
from app.matchmaking.shape import MatchShape
from app.matchmaking.windows import window_matches
from app.rating import TrueSkill

__all__ = [
    "Composition",
    "LatencyRule",
    "Match",
    "MatchShape",
    "Pool",
    "Proposal",
    "Relaxation",
    "Ticket",
    "canonical_attributes",
    "form_matches",
    "propose",
]

# Shares of a tier matched again with the tickets its earlier rounds left.
ROUNDS = 2


@dataclass(frozen=True, slots=True)
class Proposal:
    ticket_ids: tuple[str, ...]
    teams: tuple[tuple[str, ...], ...]
    quality: float
    longest_wait: float
    region: str | None = None
    roles: dict[str, str] | None = None  # under a composition: each player's role


def form_matches(
    pool: Pool,
    shape: MatchShape,
    beta: float,
    relax: Relaxation,
    max_matches: int,
    latency: LatencyRule | None = None,
) -> list[Match]:
    """The best non-overlapping matches of the shape in the pool, at most `max_matches`, best
    first. Tickets bigger than a team wait for no match."""
    forming = Forming.of(pool, shape, beta * beta, relax, max_matches)
    rule = latency if pool.latencies is not None else None
    fits = np.nonzero(pool.size <= shape.team_size)[0]
    skill = pool.mu[fits] / pool.size[fits]
    order = fits[np.lexsort((skill, pool.group[fits]))]
    matches: list[Match] = []
    for rows in np.split(order, np.flatnonzero(np.diff(pool.group[order])) + 1):
        if len(rows) < 2:
            # A match seats two tickets at least (two teams or more, a ticket or more each).
            # Groups of one are common: a matchmaking call puts each ticket its backfills'
            # fills tried in a group of its own (queues/service.py).
            continue
        if rule is None:
            matches += _matches_of(forming, rows, None)
        else:
            matches += _under_latency(forming, rows, rule)
    # Groups never compete for a ticket, so the best of every group's best is the best overall.
    matches.sort(key=lambda m: (-m.quality, m.rows))
    matches = matches[:max_matches]
    if pool.latencies is None:
        return matches
    named = regions_of(pool.latencies, [match.rows for match in matches])
    return [dataclasses.replace(m, region=r) for m, r in zip(matches, named, strict=True)]


def _matches_of(forming: Forming, rows: IntArray, region: RegionLimit | None) -> list[Match]:
    """One share's matches, by the matcher of the mode's shape."""
    shape = forming.shape
    if shape.composition is not None:
        return role_matches(forming, rows, region)
    if _pairs(shape):
        return pair_matches(forming, rows)
    return window_matches(forming, rows, region)


def _pairs(shape: MatchShape) -> bool:
    return shape.teams == 2 and shape.team_size == 1 and not shape.flexible and shape.composition is None


def _under_latency(forming: Forming, rows: IntArray, rule: LatencyRule) -> list[Match]:
    """A group's matches under the latency rule: tier by tier, each tier's tickets shared out
    among the regions and matched region by region (regions.py), then traded between regions
    (exchange.py)."""
    pool = forming.pool
    assert pool.latencies is not None
    ms = pool.latencies.ms
    left = rows
    found: list[Match] = []
    for tier in tiers(rule, pool.waited[rows]):
        if len(found) >= forming.max_matches:
            break  # the call takes no more: wider tiers would only be cut off
        allowed = np.zeros(ms.shape, dtype=np.bool_)
        allowed[rows] = ms[rows] <= tier.limits[:, None]
        if _pairs(forming.shape):
            # Pairs are taken among each region's tickets at once (pairs.py).
            pairs = pair_matches(forming, left, allowed[left], rule if tier.borrowed else None)
            found += pairs
            left = unmatched(left, pairs)
            continue
        formed: list[Match] = []
        where_of: list[int] = []
        for _ in range(ROUNDS):
            where = share(allowed[left], ms[left], pool.size[left], forming.shape.players)
            made: list[Match] = []
            for region in np.unique(where[where >= 0]).tolist():
                check = (ms[:, region], rule) if tier.borrowed else None
                part = _matches_of(forming, left[where == region], check)
                made += part
                where_of += [region] * len(part)
            if not made:
                break
            formed += made
            left = unmatched(left, made)
        if not tier.borrowed:
            formed = exchange(forming, formed, where_of, allowed)
        found += formed
    return found


def propose(
    tickets: Sequence[Ticket],
    shape: MatchShape,
    env: TrueSkill,
    relax: Relaxation,
    max_matches: int,
    latency: LatencyRule | None = None,
) -> list[Proposal]:
    """form_matches over ticket objects: the best non-overlapping matches, at most `max_matches`."""
    matches = form_matches(Pool.of(tickets), shape, env.beta, relax, max_matches, latency)
    proposals = []
    for match in matches:
        roles = None
        if match.roles is not None:
            roles = {
                player: role
                for row, names in zip(match.rows, match.roles, strict=True)
                for player, role in zip(tickets[row].players, names, strict=True)
            }
        proposals.append(
            Proposal(
                tuple(tickets[row].ticket_id for row in match.rows),
                tuple(tuple(p for row in team for p in tickets[row].players) for team in match.teams),
                match.quality,
                match.longest_wait,
                match.region,
                roles,
            )
        )
    return proposals
