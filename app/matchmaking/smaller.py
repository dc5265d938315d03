"""Matches below full size, for tickets whose wait accepts them (shape.py).

After a call's full-size matches, each ticket left whose wait accepts a smaller match anchors
one, longest wait first: the largest match the tickets left near it in skill allow, down to the
size its wait accepts, each candidate built by gathering.py. A call tries at most ANCHORS
tickets: each walks and balances the windows around it, and the rest wait for the next call.
"""

from __future__ import annotations

import numpy as np

from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.gathering import balanced_match, gather
from app.matchmaking.pool import IntArray, Match

ANCHORS = 64


def smaller_matches(forming: Forming, rows: IntArray, region: RegionLimit | None) -> list[Match]:
    """Matches below full size among `rows` (sorted by skill), each anchored on a ticket whose
    wait accepts it, longest wait first."""
    pool, shape = forming.pool, forming.shape
    if int(pool.size[rows].sum()) < shape.minimum:
        return []
    accepted = shape.accepted(pool.waited[rows], forming.relax.seconds)
    anchors = [int(k) for k in np.argsort(-pool.waited[rows], kind="stable") if accepted[k] < shape.players]
    free = np.ones(len(rows), dtype=np.bool_)
    found: list[Match] = []
    # Each anchor walks and balances windows around it: a call tries the longest waits first,
    # and at most ANCHORS of them; the rest are tried by the next call.
    for anchor in anchors[:ANCHORS]:
        if len(found) >= forming.max_matches:
            break
        if not free[anchor]:
            continue
        open_positions = np.flatnonzero(free)
        players = int(pool.size[rows[open_positions]].sum())
        for teams, team_size in shape.smaller(min(players, shape.players - 1), int(accepted[anchor]))[:2]:
            match = _anchored(forming, rows, open_positions, anchor, teams, team_size, region)
            if match is not None:
                taken = {row for row in match.rows}
                free[[k for k in open_positions.tolist() if int(rows[k]) in taken]] = False
                found.append(match)
                break
    return found


def _anchored(
    forming: Forming,
    rows: IntArray,
    open_positions: IntArray,
    anchor: int,
    teams: int,
    team_size: int,
    region: RegionLimit | None,
) -> Match | None:
    """The best match of `teams` × `team_size` among the open positions that holds the anchor."""
    pool = forming.pool
    needed = teams * team_size
    at = int(np.searchsorted(open_positions, anchor))
    candidates: list[list[int]] = []
    for first in range(max(0, at - needed + 1), at + 1):
        window = gather(forming, rows[open_positions], first, needed, teams, 4 * needed)
        if window and at in window:
            candidates.append([int(rows[open_positions[k]]) for k in window])
    best: Match | None = None
    for members in candidates:
        member_rows = np.array(members, dtype=np.int64)
        if region is not None:
            ms, rule = region
            if ms[member_rows].max() > rule.limit(float(pool.waited[member_rows].max())):
                continue
        match = balanced_match(forming, member_rows, teams)
        if match is not None and (best is None or match.quality > best.quality):
            best = match
    return best
