"""A backfill as the fill search sees it (Opening), what it gets (Fill), and what both fill
searches (backfill: one backfill at a time; backfill_batch: many at once) share: the
completed match's quality, the skill each team's open slots would need, how promising a
candidate is, and the group's free tickets sorted by skill."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Pool
from app.matchmaking.quality import team_log_quality


@dataclass(frozen=True, slots=True)
class Opening:
    """A backfill's state as the fill sees it: per team of its roster, Σ mu, Σ sigma², the
    players and the open slots; the pool group its tickets must be in; its region (under
    latencies: where the game runs) and its age in seconds."""

    mu: FloatArray
    var: FloatArray
    players: IntArray
    open: IntArray
    group: int
    region: str | None
    age: float


@dataclass(frozen=True, slots=True)
class Fill:
    """The tickets (pool rows) joining each team of the roster, and the completed match's quality."""

    teams: tuple[tuple[int, ...], ...]
    quality: float

    @property
    def rows(self) -> tuple[int, ...]:
        return tuple(row for team in self.teams for row in team)


def completed_log_quality(
    opening: Opening, mu: FloatArray, var: FloatArray, size: FloatArray, beta2: float
) -> FloatArray:
    """log quality of completed matches: per row of `mu`, `var` and `size` (each (k, teams):
    what the fill adds to every team; `size` may be one (teams,) row for all), the roster's
    sums plus those."""
    players = opening.players + size
    spread = opening.var + var + beta2 * players
    return team_log_quality(opening.mu + mu, spread, players.astype(np.float64), beta2)


def slot_targets(opening: Opening, skills: FloatArray) -> FloatArray:
    """Per team, the mean skill its open slots would need for every team's Σ mu to be level:
    the full teams' mean sum when any team is full, else the sum every team reaches with the
    roster's (or else the candidates') mean skill in each open slot."""
    # Plain floats: a roster has a few teams, and NumPy's per-call cost on arrays this small,
    # paid once per backfill, is most of a large pool's fill search.
    sums, slots = opening.mu.tolist(), opening.open.tolist()
    seated = sum(opening.players.tolist())
    mean = sum(sums) / seated if seated else float(skills.mean()) if len(skills) else 0.0
    full = [total for total, open_slots in zip(sums, slots, strict=True) if open_slots == 0]
    level = sum(full) / len(full) if full else (sum(sums) + mean * sum(slots)) / len(sums)
    return np.array(
        [
            (level - total) / open_slots if open_slots else mean
            for total, open_slots in zip(sums, slots, strict=True)
        ]
    )


def team_promise(
    opening: Opening,
    team: int,
    targets: FloatArray,
    size: IntArray,
    mu: FloatArray,
    var: FloatArray,
    beta2: float,
) -> FloatArray:
    """Per candidate, the completed match's log quality with it on `team` and every other open
    slot taken by a player of exactly the target skill (no uncertainty): a near candidate of
    large sigma can promise less than a farther one of small sigma, as eq. 7's c² grows with
    every player's sigma²."""
    # The completed match's per-team sums (completed_log_quality's, built here directly: this
    # runs for every team of every backfill).
    slots = opening.open
    players = (opening.players + slots).astype(np.float64)
    total_mu = np.empty((len(size), len(slots)))
    total_mu[:] = opening.mu + targets * slots
    total_mu[:, team] += mu - targets[team] * size
    spread = np.empty((len(size), len(slots)))
    spread[:] = opening.var + beta2 * players
    spread[:, team] += var
    return team_log_quality(total_mu, spread, players, beta2)


class FreeRows:
    """Per group, its free rows sorted by mean skill (and those skills); rows leave as fills
    take them, so a window of neighbours never runs dry where earlier backfills took the
    tickets. A chunk of the batched search holds rows (its reservations) until it ends
    (settle): held rows stay in place, marked, so that a reservation costs the few rows it
    holds rather than a copy of the group's (and the end of a chunk no new sort)."""

    def __init__(self, pool: Pool, taken: BoolArray) -> None:
        self.pool = pool
        self.taken = taken
        self.skill = pool.mu / np.maximum(pool.size, 1)
        self.groups: dict[int, tuple[IntArray, FloatArray]] = {}
        self.held: dict[int, BoolArray] = {}  # per group, per position of of()'s rows
        self.holding: dict[int, int] = {}  # per group, how many rows are held

    def of(self, group: int) -> tuple[IntArray, FloatArray]:
        """The group's free rows by skill (held ones among them: see held) and their skills."""
        if group not in self.groups:
            rows = np.flatnonzero((self.pool.group == group) & ~self.taken)
            rows = rows[np.argsort(self.skill[rows], kind="stable")]
            self.groups[group] = rows, self.skill[rows]
            self.held[group] = np.zeros(len(rows), dtype=np.bool_)
            self.holding[group] = 0
        return self.groups[group]

    def available(self, group: int) -> int:
        """How many of the group's free rows are not held."""
        return len(self.of(group)[0]) - self.holding[group]

    def around(self, group: int, at: int, width: int) -> IntArray:
        """Positions (in of()'s rows) of the `width` rows not held on each side of position
        `at` (fewer at an end), in order."""
        self.of(group)
        held = self.held[group]
        # Within `width` + (rows held) of `at`, `width` rows are not held on either side.
        span = width + self.holding[group]
        low = max(0, at - span)
        free = low + (~held[low : at + span]).nonzero()[0]
        split = int(free.searchsorted(at))
        near: IntArray = free[max(0, split - width) : split + width]
        return near

    def hold(self, group: int, positions: IntArray) -> None:
        self.held[group][positions] = True
        self.holding[group] += len(positions)

    def release(self, group: int, positions: IntArray) -> None:
        self.held[group][positions] = False
        self.holding[group] -= len(positions)

    def settle(self, taken: list[int]) -> None:
        """End a chunk: the rows its fills took leave, the others it held are free again."""
        self.taken[taken] = True
        for group, (rows, skill) in self.groups.items():
            kept = ~self.taken[rows]
            self.groups[group] = rows[kept], skill[kept]
            self.held[group] = np.zeros(int(kept.sum()), dtype=np.bool_)
            self.holding[group] = 0

    def take(self, group: int, rows: list[int]) -> None:
        """Rows a fill took (no row held meanwhile)."""
        self.taken[rows] = True
        free, skill = self.of(group)
        kept = ~self.taken[free]
        self.groups[group] = free[kept], skill[kept]
        self.held[group] = np.zeros(len(self.groups[group][0]), dtype=np.bool_)
