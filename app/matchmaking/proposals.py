"""Forming matches from waiting tickets: candidates from skill neighbours, ranked by quality.

A ticket is one player or a party. Tickets may share a match only when their attributes
(region, …) are equal: their group. Within a group, tickets are sorted by mean skill and
candidate matches are built from neighbours in that order: pairs for 1v1 (pairs.py) and
windows that exactly fill the shape, split into teams, otherwise (windows.py). Candidates
are ranked by draw quality (seed 000 eq. 7) and taken greedily without overlap, each only
if its quality clears the threshold, which relaxes linearly from `start` to `floor` over
`relax_seconds` of the longest wait in it.

Under a latency rule (latency.py) a match must also share a region where every ticket is
within the limit in force; each match is named for its best region.

The queue's proposals rank by TrueSkill's sum: quality does not change when every team's
coefficients are scaled alike, so this is exact for every team function except
size-penalised teams above their cap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.matchmaking.latency import LatencyRule, regions_of
from app.matchmaking.pairs import pair_matches
from app.matchmaking.pool import Match, Pool, Ticket, canonical_attributes
from app.matchmaking.quality import Relaxation
from app.matchmaking.windows import window_matches
from app.rating import TrueSkill

__all__ = [
    "LatencyRule",
    "Match",
    "Pool",
    "Proposal",
    "Relaxation",
    "Ticket",
    "canonical_attributes",
    "form_matches",
    "propose",
]


@dataclass(frozen=True, slots=True)
class Proposal:
    ticket_ids: tuple[str, ...]
    teams: tuple[tuple[str, ...], ...]
    quality: float
    longest_wait: float
    region: str | None = None


def form_matches(
    pool: Pool,
    teams: int,
    team_size: int,
    beta: float,
    relax: Relaxation,
    max_matches: int,
    latency: LatencyRule | None = None,
) -> list[Match]:
    """The best non-overlapping matches of teams × team_size in the pool, at most
    `max_matches`, best first. Tickets bigger than a team wait for no match."""
    beta2 = beta * beta
    rule = latency if pool.latencies is not None else None
    fits = np.nonzero(pool.size <= team_size)[0]
    skill = pool.mu[fits] / pool.size[fits]
    order = fits[np.lexsort((skill, pool.group[fits]))]
    matches: list[Match] = []
    for rows in np.split(order, np.flatnonzero(np.diff(pool.group[order])) + 1):
        if teams == 2 and team_size == 1:
            matches += pair_matches(pool, rows, beta2, relax, max_matches, rule)
        elif rule is None or pool.latencies is None:
            matches += window_matches(pool, rows, teams, team_size, beta2, relax, max_matches)
        else:
            found: list[Match] = []
            for column in pool.latencies.ms.T:
                near = rows[column[rows] <= rule.widest]
                found += window_matches(
                    pool, near, teams, team_size, beta2, relax, max_matches, (column, rule)
                )
            # One ticket may be in windows of several regions: the best window wins.
            matches += _disjoint(found)
    # Groups never compete for a ticket, so the best of every group's best is the best overall.
    matches.sort(key=lambda m: (-m.quality, m.rows))
    matches = matches[:max_matches]
    if pool.latencies is None:
        return matches
    named = regions_of(pool.latencies, [match.rows for match in matches])
    return [dataclasses.replace(m, region=r) for m, r in zip(matches, named, strict=True)]


def _disjoint(matches: list[Match]) -> list[Match]:
    """The matches best first, each kept only if it shares no ticket with a better one."""
    used: set[int] = set()
    kept = []
    for match in sorted(matches, key=lambda m: (-m.quality, m.rows)):
        if used.isdisjoint(match.rows):
            used.update(match.rows)
            kept.append(match)
    return kept


def propose(
    tickets: Sequence[Ticket],
    teams: int,
    team_size: int,
    env: TrueSkill,
    relax: Relaxation,
    max_matches: int,
    latency: LatencyRule | None = None,
) -> list[Proposal]:
    """form_matches over ticket objects: the best non-overlapping matches, at most `max_matches`."""
    matches = form_matches(Pool.of(tickets), teams, team_size, env.beta, relax, max_matches, latency)
    return [
        Proposal(
            tuple(tickets[row].ticket_id for row in match.rows),
            tuple(tuple(p for row in team for p in tickets[row].players) for team in match.teams),
            match.quality,
            match.longest_wait,
            match.region,
        )
        for match in matches
    ]
