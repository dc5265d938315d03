"""Matches under a composition: roles dealt by scarcity, matches cut from each role by skill.

Windows of skill neighbours (windows.py) rarely hold a composition when a role is scarce: with
15% of players able to heal, most windows of ten have fewer than two healers. So, for players
on their own:

1. The most matches the players' roles allow, M, is read from Hall's condition (allocation.py):
   for every set A of roles, M · teams · (A's slots) may not exceed the players who accept a
   role of A. A transport then says how many players of each kind (the same accepted roles)
   take each role, exactly M · teams · count of each.
2. Within a kind, players are dealt to their roles (or left out) evenly across its skill order,
   so every role's players spread over the same skills as the pool's.
3. Each role's players, sorted by skill, are cut into M runs of teams · count; match j takes run
   j of every role: players of about the same skill quantile in every role.
4. Each match takes its best split over every split whose teams can seat their players in the
   composition (Hall's condition per team, all splits scored at once as in windows.py), so
   a player who accepts several roles may end in any of them; up to EXACT_LIMIT players, the
   best there is. Above, balance.py's heuristic under the composition.

A match holding two players who avoid each other trades one of them for the nearest player in
skill who can take the same role (_mend). Matches below their threshold, or still holding such
a pair, give their players back, and the steps run again on those left (ROUNDS at most).
Parties, and smaller matches for long waits, go through windows.py with the composition as a
rule of admission.
"""

from __future__ import annotations

import math

import numpy as np

from app.matchmaking.allocation import coverage, deal, transport
from app.matchmaking.balance import EXACT_LIMIT
from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.gathering import balanced_match
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Match, unmatched
from app.matchmaking.quality import log_thresholds
from app.matchmaking.roles import Composition
from app.matchmaking.scoring import pattern_scores, split_patterns
from app.matchmaking.smaller import smaller_matches
from app.matchmaking.windows import window_matches

ROUNDS = 3
# Matches checked per NumPy pass: bounds the (matches × splits × role sets) arrays.
CHUNK_CELLS = 4_000_000


def role_matches(forming: Forming, rows: IntArray, region: RegionLimit | None = None) -> list[Match]:
    """Matches among `rows` (one group's tickets, sorted by skill) that meet the composition."""
    pool = forming.pool
    solo = rows[pool.size[rows] == 1]
    found: list[Match] = []
    left = solo
    for _ in range(ROUNDS):
        made = _quantile_matches(forming, left, region)
        if not made:
            break
        found += made
        left = unmatched(left, made)
    parties = rows[pool.size[rows] > 1]
    if len(parties):
        rest = np.concatenate([left, parties])
        rest = rest[np.argsort(pool.mu[rest] / pool.size[rest], kind="stable")]
        return found + window_matches(forming, rest, region)
    if forming.shape.flexible:
        found += smaller_matches(forming, left, region)
    return found


def most_matches(composition: Composition, masks: IntArray, teams: int) -> int:
    """The most matches of `teams` teams these players' roles allow (Hall's condition)."""
    kinds, counts = np.unique(masks, return_counts=True)
    covered = coverage(kinds.tolist(), counts.tolist(), len(composition.roles))
    return min(covered[subset] // (teams * composition.caps[subset]) for subset in range(1, len(covered)))


def _quantile_matches(forming: Forming, rows: IntArray, region: RegionLimit | None) -> list[Match]:
    composition = forming.shape.composition
    assert composition is not None and forming.masks is not None
    teams = forming.shape.teams
    masks = forming.masks[rows]
    if not len(rows):
        return []
    matches = most_matches(composition, masks, teams)
    if matches == 0:
        return []
    kinds, inverse, counts = np.unique(masks, return_inverse=True, return_counts=True)
    shares = transport(kinds.tolist(), counts.tolist(), [matches * teams * c for c in composition.counts])
    assert shares is not None  # Hall's condition held for these demands
    roles = len(composition.roles)
    role_at = np.full(len(rows), -1, dtype=np.int64)
    for kind, share in enumerate(shares):
        positions = np.flatnonzero(inverse == kind)  # in skill order
        dealt = deal([*share, int(counts[kind]) - sum(share)])
        role_at[positions] = np.where(dealt < roles, dealt, -1)
    runs = [
        np.flatnonzero(role_at == role).reshape(matches, teams * count)
        for role, count in enumerate(composition.counts)
    ]
    positions = np.concatenate(runs, axis=1)  # (matches, players), each row a match
    if forming.clashes:
        column_role = np.concatenate([np.full(teams * c, r) for r, c in enumerate(composition.counts)])
        _mend(forming, rows, positions, column_role, masks)
    return _split(forming, rows[positions], region)


def _mend(
    forming: Forming,
    rows: IntArray,
    positions: IntArray,
    column_role: IntArray,
    masks: IntArray,
) -> None:
    """Matches (rows of `positions`) holding two players who avoid each other, mended in place:
    one of them trades places with the player nearest in skill who can take the same role, from
    a match next to it (which must stay clear) or from those no match took. A match no trade
    mends keeps its clash, and _split drops it."""
    pool = forming.pool
    skill = pool.mu[rows]
    owner = {int(p): (m, c) for m, row in enumerate(positions) for c, p in enumerate(row.tolist())}

    def clashes(row: IntArray) -> int:
        members = rows[row]
        a, b = np.triu_indices(len(members), 1)
        return int(forming.clashes.between(members[a], members[b]).sum())

    for match in range(len(positions)):
        for _ in range(positions.shape[1]):
            count = clashes(positions[match])
            if not count:
                break
            members = rows[positions[match]]
            a, b = np.triu_indices(len(members), 1)
            hit = forming.clashes.between(members[a], members[b])
            best: tuple[float, int, int] | None = None  # (skill distance, column, position)
            for column in sorted(set(a[hit].tolist()) | set(b[hit].tolist())):
                mine = int(positions[match, column])
                role = int(column_role[column])
                for other in range(len(rows)):
                    if not masks[other] >> role & 1 or other == mine:
                        continue
                    held = owner.get(other)
                    if held is not None and (abs(held[0] - match) != 1 or column_role[held[1]] != role):
                        continue
                    trial = positions[match].copy()
                    trial[column] = other
                    if clashes(trial) >= count:
                        continue
                    if held is not None:
                        theirs = positions[held[0]].copy()
                        theirs[held[1]] = mine
                        if clashes(theirs):
                            continue
                    distance = abs(float(skill[other] - skill[mine]))
                    if best is None or distance < best[0]:
                        best = (distance, column, other)
            if best is None:
                break
            _, column, other = best
            mine = int(positions[match, column])
            held = owner.pop(other, None)
            positions[match, column] = other
            owner[other] = (match, column)
            del owner[mine]
            if held is not None:
                positions[held] = mine
                owner[mine] = held


def _split(forming: Forming, members: IntArray, region: RegionLimit | None) -> list[Match]:
    """Each candidate match (a row of `members`) in its best role-valid split, if it clears its
    threshold and holds no players who avoid each other; the best first, as many as the call
    may take."""
    pool = forming.pool
    composition = forming.shape.composition
    assert composition is not None and forming.masks is not None
    teams, team_size = forming.shape.teams, forming.shape.team_size
    longest = pool.waited[members].max(axis=1)
    keep = np.ones(len(members), dtype=np.bool_)
    if region is not None:
        ms, rule = region
        keep &= ms[members].max(axis=1) <= rule.limits(longest)
    if forming.clashes:
        a, b = np.triu_indices(members.shape[1], 1)
        keep &= ~forming.clashes.between(members[:, a].ravel(), members[:, b].ravel()).reshape(
            len(members), -1
        ).any(1)
    patterns = split_patterns(teams, team_size) if teams * team_size <= EXACT_LIMIT else None
    if patterns is None:
        found = []
        for number in np.flatnonzero(keep).tolist():
            match = balanced_match(forming, members[number], teams)
            if match is not None:
                found.append(match)
        return sorted(found, key=lambda m: -m.quality)[: forming.max_matches]
    scores = pattern_scores(pool.mu[members], pool.var[members], patterns, teams, team_size, forming.beta2)
    # Matches cut from the same runs often hold the same masks: each distinct row is checked once.
    kinds, inverse = np.unique(forming.masks[members], axis=0, return_inverse=True)
    scores[~valid_splits(composition, kinds, patterns, teams)[inverse.ravel()]] = -np.inf
    best = scores.argmax(axis=1)
    log_quality = scores[np.arange(len(members)), best]
    keep &= log_quality >= log_thresholds(forming.relax, longest)
    chosen = np.flatnonzero(keep)
    chosen = chosen[np.argsort(-log_quality[chosen], kind="stable")][: forming.max_matches]
    found = []
    for number in chosen.tolist():
        window = members[number]
        labels = patterns[best[number]]
        team_rows = [window[labels == team].tolist() for team in range(teams)]
        assert forming.preferences is not None
        seated = []
        for team in team_rows:
            roles = composition.assign([p for row in team for p in forming.preferences[row]])
            assert roles is not None  # the split passed Hall's condition for every team
            seated.append(roles)
        match = Match(
            tuple(tuple(team) for team in team_rows), math.exp(log_quality[number]), float(longest[number])
        )
        found.append(
            Match(match.teams, match.quality, match.longest_wait, roles=forming.roles_of(match, seated))
        )
    return found


def valid_splits(composition: Composition, masks: IntArray, patterns: IntArray, teams: int) -> BoolArray:
    """Per candidate (a row of masks, one player each) and split: whether every team can seat
    its players in the composition (Hall's condition, roles.py)."""
    caps = np.array(composition.caps, dtype=np.float64)[:, None]
    indicators = [(patterns == team).T.astype(np.float64) for team in range(teams)]
    count, players = masks.shape
    valid = np.ones((count, len(patterns)), dtype=np.bool_)
    step = max(1, CHUNK_CELLS // (len(patterns) * composition.subsets))
    for start in range(0, count, step):
        inside: FloatArray = composition.inside(masks[start : start + step]).astype(np.float64)
        rows = len(inside)
        # (matches × role sets, players) @ (players, splits): one product per team.
        flat = inside.transpose(0, 2, 1).reshape(-1, players)
        for indicator in indicators:
            counts = (flat @ indicator).reshape(rows, composition.subsets, len(patterns))
            valid[start : start + step] &= (counts <= caps).all(axis=1)
    return valid
