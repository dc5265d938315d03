"""Which tickets try for a match in which region, under the latency limit in force.

A match forms only in a region where each of its tickets is within the limit in force, the
limit of its longest wait (latency.py). Windows of skill neighbours taken among every ticket
that could ever play in a region mostly mix tickets near it with tickets far from it, and the
limit then refuses them. So a call works in tiers, tightest first, and within a tier shares the
tickets out among the regions before any match is formed there:

1. the starting limit: a ticket is a candidate in every region within `start_ms`;
2. its own limit: within the limit its own wait has reached (any match it joins has waited at
   least as long, so no window needs checking);
3. a borrowed limit: within the limit the longest wait among the tickets left has reached; a
   match of this tier is checked against the limit of its own longest wait.

A tier takes only the tickets the tighter tiers left, so no match uses a wider limit while a
match within a tighter one was there for its tickets.

Sharing (`share`) sends each ticket to one of its regions. A ticket near two regions could go to
either, and how many matches a region holds depends only on how many players it gets. So the
share first sets how many full matches m_r each region is to hold: from every ticket at its
nearest region, it raises one region's m_r at a time while Hall's condition (allocation.py)
says the tickets can still give every region k · m_r players at once. A transport then says how
many tickets of each kind (the same set of regions) go where, dealt over each kind's skill
order; a kind's tickets beyond that go to their nearest region.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.matchmaking.allocation import HALL_LIMIT, coverage, deal, meets_hall, transport
from app.matchmaking.latency import LatencyRule
from app.matchmaking.pool import BoolArray, FloatArray, IntArray


@dataclass(frozen=True, slots=True)
class Tier:
    """Per ticket of the list, the limit it may play under in this tier; `borrowed`: matches
    must then be checked against the limit of their own longest wait."""

    limits: FloatArray
    borrowed: bool


def tiers(rule: LatencyRule, waited: FloatArray) -> list[Tier]:
    """The tiers of a list of tickets waiting `waited` seconds, tightest first; a tier that
    admits no ticket a tighter one did not is left out."""
    found = [Tier(np.full(len(waited), rule.start_ms), borrowed=False)]
    if not len(waited) or rule.relaxed_ms <= rule.start_ms:
        return found
    own = rule.limits(waited)
    if (own > rule.start_ms).any():
        found.append(Tier(own, borrowed=False))
    widest = rule.limit(float(waited.max()))
    if (own < widest).any():
        found.append(Tier(np.full(len(waited), widest), borrowed=True))
    return found


def share(feasible: BoolArray, ms: FloatArray, players: IntArray, needed: int) -> IntArray:
    """Per ticket (a row of `feasible`, tickets × regions): the region it goes to, −1 for none."""
    count, regions = feasible.shape
    within = np.where(feasible, ms, np.inf)
    nearest: IntArray = within.argmin(axis=1)
    nearest[~feasible.any(axis=1)] = -1
    active = np.flatnonzero(feasible.any(axis=0))
    if len(active) < 2 or len(active) > HALL_LIMIT or bool((players != 1).any()):
        return nearest
    bits = (feasible[:, active].astype(np.int64) << np.arange(len(active), dtype=np.int64)).sum(axis=1)
    located = bits > 0
    kinds, inverse, supply = np.unique(bits[located], return_inverse=True, return_counts=True)
    column = np.full(regions, -1, dtype=np.int64)
    column[active] = np.arange(len(active))
    intake = np.bincount(column[nearest[located]], minlength=len(active))
    target = (intake // needed).tolist()
    covered = coverage(kinds.tolist(), supply.tolist(), len(active))
    raised = True
    while raised:
        raised = False
        for region in np.argsort(-(intake % needed), kind="stable").tolist():
            target[region] += 1
            if meets_hall(covered, [needed * m for m in target]):
                raised = True
            else:
                target[region] -= 1
    shares = transport(kinds.tolist(), supply.tolist(), [needed * m for m in target])
    if shares is None:  # cannot happen: Hall's condition held for these demands
        return nearest
    result = np.full(count, -1, dtype=np.int64)
    rows = np.flatnonzero(located)
    for kind, kind_shares in enumerate(shares):
        members = rows[inverse == kind]  # in the list's (skill) order
        dealt = deal([*kind_shares, len(members) - sum(kind_shares)])
        sent = dealt < len(active)
        result[members[sent]] = active[dealt[sent]]
        result[members[~sent]] = nearest[members[~sent]]
    return result
