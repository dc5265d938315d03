"""Backfill: filling the open slots of a game already running (or about to start) from the pool.

A backfill is a roster (its teams' players, some slots open) that the queue fills with waiting
tickets, parties whole, each onto one team, every open slot at once. Fills are chosen for the
draw quality of the completed match (seed 000 eq. 7 over every team's sums, as quality.py
scores new matches), and one clears the threshold of the backfill's age, relaxed as a ticket's
is by its wait. Backfills are served before new matches form (Open Match 2's guidance), oldest
first, each taking its tickets out of reach of the next.

The search per backfill is local: candidates are the free tickets nearest in mean skill to the
mean each team's open slots would need for level team sums; a first fill takes the nearest
solos (or, short of them, parties that fit), then moves that raise the quality are made while
there are any: a chosen ticket swapped for a candidate of the same size, a set of a team's
chosen tickets for one party of their size, or two chosen tickets of one size between teams.

On large pools (WIDE free tickets per open slot) backfills are searched in chunks instead
(fill_backfills, backfill_batch): each reserves a few promising candidates per team, and the
chunk's backfills of one open pattern share one exhaustive search of their own candidates.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from app.matchmaking.backfill_batch import CHUNK, batched, fill_chunk, reserve
from app.matchmaking.latency import LatencyRule
from app.matchmaking.opening import Fill, FreeRows, Opening, completed_log_quality, slot_targets, team_promise
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Pool
from app.matchmaking.quality import Relaxation

__all__ = ["Fill", "Opening", "best_fill", "completed_log_quality", "fill_backfills", "slot_targets"]

# Free tickets considered per team of a backfill, from each side of its target skill.
NEIGHBOURS = 6
# Rounds of refilling each team in turn; they stop early once none raises the quality.
ROUNDS = 2
# The first, joint search tries every fill of all the candidates when they make at most EXACT
# (small pools: the fill is then the best there is), else at most JOINT of the nearest ones'.
EXACT = 12_000
JOINT = 600
# Candidates a team's refill chooses among (its own and free ones nearest its target skill).
REFILL = 14


def best_fill(
    opening: Opening,
    size: IntArray,
    mu: FloatArray,
    var: FloatArray,
    beta2: float,
) -> tuple[tuple[int, ...], ...] | None:
    """Per team, the candidates (indices into `size`, `mu`, `var`) that fill its open slots
    for a completed match of high quality; None when the candidates cannot fill them all.

    First the best fill of all from the most promising candidates, as many as keep that
    search within JOINT fills (every candidate on small pools, EXACT: that fill is then the
    answer); then each round refills one team at a time with the best set of candidates for
    it, the other teams held (every set of the team's nearest free candidates that fits its
    slots exactly, scored at once), then tries swapping chosen tickets of one size between
    teams; rounds go on while one raises the quality."""
    teams = len(opening.open)
    skill = mu / np.maximum(size, 1)
    where, exact = _joint(opening, size, mu, var, skill, beta2)
    if exact:
        return (
            None if where is None else tuple(tuple(np.flatnonzero(where == t).tolist()) for t in range(teams))
        )
    if where is None:
        chosen = _first_fill(opening, size, mu, beta2)
        if chosen is None:
            return None
        where = np.full(len(size), -1, dtype=np.int64)  # each candidate's team, -1 when not chosen
        for team, picks in enumerate(chosen):
            where[list(picks)] = team
    for _ in range(ROUNDS):
        before = current = _score(opening, where, size, mu, var, beta2)
        for team in np.flatnonzero(opening.open > 0).tolist():
            current = _refill(opening, team, where, size, mu, var, skill, beta2, current)
        current = _swap(opening, where, size, mu, var, beta2, current)
        if current <= before:
            break
    return tuple(tuple(np.flatnonzero(where == team).tolist()) for team in range(teams))


def _joint(
    opening: Opening, size: IntArray, mu: FloatArray, var: FloatArray, skill: FloatArray, beta2: float
) -> tuple[IntArray | None, bool]:
    """The best fill of all among every candidate (when they make at most EXACT fills) or the
    n most promising (_promise), n as large as keeps the fills to try within JOINT (each
    team's sets of exact size, pairwise disjoint, scored at once): per candidate its team or
    -1 (None when those candidates fill no fill), and whether that search took every
    candidate (its fill is then the best of all)."""
    teams = np.flatnonzero(opening.open > 0).tolist()
    distance = -_promise(opening, size, mu, var, skill, beta2)
    n = min(len(size), 62)  # sets as bits of an int64

    def fills(n: int) -> int:
        return math.prod(math.comb(n, int(opening.open[t])) for t in teams)

    if fills(n) > EXACT:
        while n > 1 and fills(n) > JOINT:
            n -= 1
    near = np.argsort(distance, kind="stable")[:n]
    exact = n == len(size)
    bits = np.left_shift(1, np.arange(len(near), dtype=np.int64))
    masks = np.zeros(1, dtype=np.int64)
    add_mu = np.zeros((1, len(opening.open)))
    add_var = np.zeros((1, len(opening.open)))
    picks: list[IntArray] = []  # per team in `teams`: each row's set
    team_sets: list[IntArray] = []
    for team in teams:
        sets = _sets(size[near], int(opening.open[team]))
        if not len(sets):
            return None, exact
        present = sets >= 0
        set_mask = np.where(present, bits[sets], 0).sum(axis=1)
        left, right = np.nonzero((masks[:, None] & set_mask[None, :]) == 0)
        if not len(left):
            return None, exact
        masks = masks[left] | set_mask[right]
        add_mu, add_var = add_mu[left], add_var[left]
        add_mu[:, team] += np.where(present, mu[near][sets], 0.0).sum(axis=1)[right]
        add_var[:, team] += np.where(present, var[near][sets], 0.0).sum(axis=1)[right]
        picks = [chosen[left] for chosen in picks] + [right]
        team_sets.append(sets)
    add_size = np.broadcast_to(opening.open.astype(np.float64), add_mu.shape)
    best = int(completed_log_quality(opening, add_mu, add_var, add_size, beta2).argmax())
    where = np.full(len(size), -1, dtype=np.int64)
    for team, sets, chosen in zip(teams, team_sets, picks, strict=True):
        members = sets[chosen[best]]
        where[near[members[members >= 0]]] = team
    return where, exact


def _promise(
    opening: Opening, size: IntArray, mu: FloatArray, var: FloatArray, skill: FloatArray, beta2: float
) -> FloatArray:
    """Per candidate, how good a fill it can be part of: the best of its team_promise over the
    teams it fits."""
    targets = slot_targets(opening, skill)
    best = np.full(len(size), -np.inf)
    for team in np.flatnonzero(opening.open > 0).tolist():
        scores = team_promise(opening, team, targets, size, mu, var, beta2)
        best = np.where(size <= opening.open[team], np.maximum(best, scores), best)
    return best


def _score(
    opening: Opening, where: IntArray, size: IntArray, mu: FloatArray, var: FloatArray, beta2: float
) -> float:
    added = _added(where, size, mu, var, len(opening.open))
    return float(completed_log_quality(opening, added[0][None], added[1][None], added[2][None], beta2)[0])


def _refill(
    opening: Opening,
    team: int,
    where: IntArray,
    size: IntArray,
    mu: FloatArray,
    var: FloatArray,
    skill: FloatArray,
    beta2: float,
    current: float,
) -> float:
    """Give the team the best set of candidates for its open slots, the others held: among
    its own and the free candidates, the REFILL nearest its target skill. The fill's log
    quality then (`current`, that of the fill as it was, when nothing better was found)."""
    open_slots = int(opening.open[team])
    mine = where == team
    usable = np.flatnonzero(mine | (where < 0))
    usable = usable[size[usable] <= open_slots]
    others = where.copy()
    others[mine] = -1
    added = _added(others, size, mu, var, len(opening.open))
    if len(usable) > REFILL:
        level = float((opening.mu + added[0]).sum() - opening.mu[team] - added[0][team]) / max(
            1, len(opening.open) - 1
        )
        target = (level - opening.mu[team]) / open_slots
        usable = usable[np.argsort(np.abs(skill[usable] - target), kind="stable")[:REFILL]]
    sets = _sets(size[usable], open_slots)
    if not len(sets):
        return current
    members = usable[sets]  # (sets, k) with -1 padding mapped below
    present = sets >= 0
    set_mu = np.where(present, mu[members], 0.0).sum(axis=1)
    set_var = np.where(present, var[members], 0.0).sum(axis=1)
    add_mu = np.broadcast_to(added[0], (len(sets), len(opening.open))).copy()
    add_var = np.broadcast_to(added[1], (len(sets), len(opening.open))).copy()
    add_size = np.broadcast_to(added[2], (len(sets), len(opening.open))).copy()
    add_mu[:, team] = set_mu
    add_var[:, team] = set_var
    add_size[:, team] = open_slots
    scores = completed_log_quality(opening, add_mu, add_var, add_size, beta2)
    best = int(scores.argmax())
    if scores[best] <= current + 1e-12:
        return current
    where[mine] = -1
    where[members[best][present[best]]] = team
    return float(scores[best])


_SETS: dict[tuple[int, int], IntArray] = {}


def _combinations(n: int, k: int) -> IntArray:
    """Every k of range(n), a row each (cached: a few shapes recur for every backfill)."""
    found = _SETS.get((n, k))
    if found is None:
        found = _SETS[(n, k)] = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(
            -1, k
        )
    return found


def _sets(sizes: IntArray, total: int) -> IntArray:
    """Every set of positions whose sizes add up to `total`, a row each, padded with -1."""
    if total <= len(sizes) and bool((sizes == 1).all()):
        return _combinations(len(sizes), total)  # solos only: the common case, no filter
    rows: list[IntArray] = []
    for k in range(1, min(total, len(sizes)) + 1):
        sets = _combinations(len(sizes), k)
        fits = sets[sizes[sets].sum(axis=1) == total]
        if len(fits):
            padded = np.full((len(fits), total), -1, dtype=np.int64)
            padded[:, :k] = fits
            rows.append(padded)
    if not rows:
        return np.zeros((0, total), dtype=np.int64)
    return np.concatenate(rows)


def _swap(
    opening: Opening,
    where: IntArray,
    size: IntArray,
    mu: FloatArray,
    var: FloatArray,
    beta2: float,
    current: float,
) -> float:
    """Make the best swap of two chosen tickets of one size between teams, if it raises the
    quality (`current`, the fill's log quality before). The fill's log quality then."""
    teams = len(opening.open)
    pairs = [
        (x, y)
        for a, b in itertools.combinations(range(teams), 2)
        for x in np.flatnonzero(where == a).tolist()
        for y in np.flatnonzero(where == b).tolist()
        if size[x] == size[y]
    ]
    if not pairs:
        return current
    added = _added(where, size, mu, var, teams)
    delta_mu = np.zeros((len(pairs), teams))
    delta_var = np.zeros((len(pairs), teams))
    for number, (x, y) in enumerate(pairs):
        a, b = where[x], where[y]
        delta_mu[number, a] += mu[y] - mu[x]
        delta_mu[number, b] += mu[x] - mu[y]
        delta_var[number, a] += var[y] - var[x]
        delta_var[number, b] += var[x] - var[y]
    scores = completed_log_quality(
        opening, added[0] + delta_mu, added[1] + delta_var, np.broadcast_to(added[2], delta_mu.shape), beta2
    )
    best = int(scores.argmax())
    if scores[best] <= current + 1e-12:
        return current
    x, y = pairs[best]
    where[x], where[y] = where[y], where[x]
    return float(scores[best])


def _added(
    where: IntArray, size: IntArray, mu: FloatArray, var: FloatArray, teams: int
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per team: the chosen candidates' Σ mu, Σ sigma² and players."""
    chosen = where >= 0
    at = where[chosen]
    # (bincount of nothing is integer, whatever its weights)
    return (
        np.bincount(at, weights=mu[chosen], minlength=teams).astype(np.float64),
        np.bincount(at, weights=var[chosen], minlength=teams).astype(np.float64),
        np.bincount(at, weights=size[chosen], minlength=teams).astype(np.float64),
    )


def _first_fill(opening: Opening, size: IntArray, mu: FloatArray, beta2: float) -> list[list[int]] | None:
    """A first fill: each team's open slots from the solos nearest the skill that levels the
    teams' sums, or when solos are short, the largest parties that fit first."""
    targets = slot_targets(opening, mu / np.maximum(size, 1))
    teams = len(opening.open)
    taken = np.zeros(len(size), dtype=np.bool_)
    chosen: list[list[int]] = [[] for _ in range(teams)]
    solos = np.flatnonzero(size == 1)
    if len(solos) >= int(opening.open.sum()):
        for team in np.argsort(-opening.open).tolist():
            need = int(opening.open[team])
            if need == 0:
                continue
            order = solos[np.argsort(np.abs(mu[solos] - targets[team]), kind="stable")]
            picks = [int(c) for c in order if not taken[c]][:need]
            taken[picks] = True
            chosen[team] = picks
        return chosen
    # Largest first, nearest the team's target among equal sizes.
    for team in np.argsort(-opening.open).tolist():
        left = int(opening.open[team])
        skill = mu / np.maximum(size, 1)
        order = np.lexsort((np.abs(skill - targets[team]), -size))
        for candidate in order.tolist():
            if left == 0:
                break
            if not taken[candidate] and size[candidate] <= left:
                taken[candidate] = True
                chosen[team].append(candidate)
                left -= int(size[candidate])
        if left:
            return None
    return chosen


def fill_backfills(
    pool: Pool,
    openings: Sequence[Opening],
    beta: float,
    relax: Relaxation,
    latency: LatencyRule | None = None,
    usable: BoolArray | None = None,
) -> list[Fill | None]:
    """Per opening, in order, the fill chosen for it (None: none clears its threshold, or its
    slots cannot all be filled); an earlier opening's tickets are out of reach of later ones.
    `usable` leaves rows out of every fill (e.g. tickets with avoid lists).

    Where the group's free tickets are many (WIDE per open slot), backfills are searched in
    chunks (backfill_batch): each in turn reserves its teams' most promising free candidates,
    so an earlier backfill still has the first pick, and the chunk's backfills of one open
    pattern share one array search; the reserved tickets no fill took are free again after
    the chunk.
    Elsewhere (small pools, latencies, avoid lists) each backfill is searched alone
    (best_fill), exhaustively on small pools."""
    free = FreeRows(pool, np.zeros(len(pool), dtype=np.bool_) if usable is None else ~usable)
    fills: list[Fill | None] = [None] * len(openings)
    chunk: list[tuple[int, list[IntArray]]] = []
    for index, opening in enumerate(openings):
        if int(opening.open.sum()) == 0:
            continue
        reserved = reserve(pool, free, opening, beta * beta) if batched(pool, free, opening) else None
        if reserved is not None:
            chunk.append((index, reserved))
            if len(chunk) < CHUNK:
                continue
            late = fill_chunk(pool, free, openings, chunk, beta * beta, relax, fills)
        else:
            late = [*fill_chunk(pool, free, openings, chunk, beta * beta, relax, fills), index]
        chunk = []
        for number in late:
            fills[number] = _fill_one(pool, free, openings[number], beta * beta, relax, latency)
    for number in fill_chunk(pool, free, openings, chunk, beta * beta, relax, fills):
        fills[number] = _fill_one(pool, free, openings[number], beta * beta, relax, latency)
    return fills


def _fill_one(
    pool: Pool,
    free: FreeRows,
    opening: Opening,
    beta2: float,
    relax: Relaxation,
    latency: LatencyRule | None,
) -> Fill | None:
    """The opening's fill by best_fill from its teams' free neighbours (taken out of `free`)."""
    skill = free.skill
    rows, sorted_skill = free.of(opening.group)
    allowed = _within_latency(pool, rows, opening, latency)
    targets = slot_targets(opening, sorted_skill)
    picked: list[IntArray] = []
    reach = NEIGHBOURS * int(opening.open.max())
    for team in np.flatnonzero(opening.open > 0).tolist():
        at = int(np.searchsorted(sorted_skill, targets[team]))
        span = rows[max(0, at - 4 * reach) : at + 4 * reach]
        ok = allowed[max(0, at - 4 * reach) : at + 4 * reach]
        span = span[ok & (pool.size[span] <= opening.open.max())]
        near = np.argsort(np.abs(skill[span] - targets[team]), kind="stable")[: 2 * reach]
        picked.append(span[near])
    candidates = np.unique(np.concatenate(picked)) if picked else np.zeros(0, dtype=np.int64)
    candidates = _without_clashes(pool, candidates)
    chosen = best_fill(opening, pool.size[candidates], pool.mu[candidates], pool.var[candidates], beta2)
    if chosen is None:
        return None
    teams = tuple(tuple(int(candidates[c]) for c in team) for team in chosen)
    added_mu = np.array([[pool.mu[list(team)].sum() for team in teams]])
    added_var = np.array([[pool.var[list(team)].sum() for team in teams]])
    added_size = np.array([[pool.size[list(team)].sum() for team in teams]], dtype=np.float64)
    log_quality = float(completed_log_quality(opening, added_mu, added_var, added_size, beta2)[0])
    quality = float(np.exp(log_quality))
    if quality < relax.threshold(opening.age):
        return None
    fill = Fill(teams, quality)
    free.take(opening.group, list(fill.rows))
    return fill


def _within_latency(pool: Pool, rows: IntArray, opening: Opening, rule: LatencyRule | None) -> BoolArray:
    """Which rows may play in the opening's region: every row without latencies or without a
    region to check; else those within the rule's limit at the backfill's age (or, with no
    rule, those that list the region at all)."""
    latencies = pool.latencies
    if latencies is None or opening.region is None:
        return np.ones(len(rows), dtype=np.bool_)
    located = latencies.located[rows]
    if opening.region not in latencies.regions:
        return ~located
    ms = latencies.ms[rows, list(latencies.regions).index(opening.region)]
    limit = rule.limit(opening.age) if rule is not None else np.inf
    within: BoolArray = ~located | (ms <= limit)
    return within


def _without_clashes(pool: Pool, candidates: IntArray) -> IntArray:
    """The candidates but those in a clashing pair with another candidate (avoid lists): such
    tickets wait for a new match, where the pairing is checked."""
    if pool.clashes is None or not len(pool.clashes) or not len(candidates):
        return candidates
    among = np.isin(pool.clashes, candidates).all(axis=1)
    clashing = np.unique(pool.clashes[among])
    kept: IntArray = candidates[~np.isin(candidates, clashing)]
    return kept
