"""What one run leaves behind, the same for both clocks: every ticket, every match, every
player's tally, and the convergence checkpoints (pure).

A clock appends to a `Recorder` as the loop runs; `finish` freezes it into a `Run` of NumPy
columns, which measures.py turns into the report's tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# How a ticket left the queue (DECLINED: cancelled by a failed ready check, a player of it
# having declined).
MATCHED, EXPIRED, LEFT_AT_END, DECLINED = 0, 1, 2, 3


def average_ranks(values: FloatArray) -> FloatArray:
    """1-based ranks, ties sharing the mean of their ranks (as Spearman's rho needs)."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    ends = np.concatenate([starts[1:], [len(values)]])
    mean_rank = (starts + ends + 1) / 2.0
    result = np.empty(len(values))
    result[order] = np.repeat(mean_rank, ends - starts)
    return result


def spearman(a: FloatArray, b: FloatArray) -> float:
    """Spearman's rank correlation: Pearson's on average ranks (0 when either is constant)."""
    ra, rb = average_ranks(a), average_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    scale = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / scale) if scale > 0 else 0.0


# Games after which each player's ratings are kept for the convergence measure.
CHECKPOINT_GAMES = (*range(1, 31), *range(35, 101, 5), 120, 150, 200, 250, 300, 400, 500)
# A checkpoint is measured over at least this many players who reached it.
CHECKPOINT_PLAYERS = 50


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Rank correlations with the true skills, over the `players` who played at least `games`
    games, each rated as they were right after their `games`-th game: of the displayed rating
    mu − k·sigma, of mu alone, and of Elo."""

    games: int
    players: int
    displayed: float
    mu: float
    elo: float


@dataclass(frozen=True, slots=True)
class Run:
    """One run of a scenario: tickets, matches and players as columns."""

    clock: str  # "virtual" or "live"
    pairing: str  # "quality" (the mode's matchmaking) or "random"
    teams: int  # per match
    duration: float  # seconds simulated (or, live, played)
    wall_seconds: float
    # Tickets: when queued, how long they waited, how they left (MATCHED, EXPIRED, LEFT_AT_END),
    # their players, the mean true skill of those and the games they had played before, the
    # players' home region (index).
    ticket_enqueued: FloatArray
    ticket_waited: FloatArray
    ticket_outcome: IntArray
    ticket_players: IntArray
    ticket_skill: FloatArray
    ticket_played: FloatArray
    ticket_region: IntArray
    # Under roles, for a solo player's ticket: the role they list first, and the role the match
    # seated them in (indices of `roles`; -1: a party, no roles, or not matched).
    ticket_role: IntArray
    ticket_seated: IntArray
    # Matches: when formed, the matchmaker's quality, and for two teams the gap of the teams'
    # Σ mu and the spread Σ (sigma² + beta²) of both before the match (what a prediction
    # needs), the outcome (truth.py's codes; -1 for more teams), the region (index; -1 none).
    match_formed: FloatArray
    match_quality: FloatArray
    match_gap: FloatArray
    match_spread: FloatArray
    match_outcome: IntArray
    match_region: IntArray
    match_players: IntArray  # players in the match (below full size when the mode lets it shrink)
    # Players: true skill at the end, games played, score (wins + draws/2), final ratings.
    skill: FloatArray
    games: IntArray
    score: FloatArray
    mu: FloatArray
    sigma: FloatArray
    elo: FloatArray
    checkpoints: tuple[Checkpoint, ...]
    turned_away: int = 0  # arrivals with nobody offline to arrive
    errors: tuple[str, ...] = ()  # live: every failed call, one line each
    lost_results: int = 0  # live: matches formed whose result the service does not hold
    roles: tuple[str, ...] = ()  # the mode's roles, under a composition
    # The ready check (when the mode has one): proposals formed, how many failed (a player
    # declined), and per ticket a failure put back in the queue, its extra wait (from its first
    # failed proposal to leaving the queue) and how it left.
    ready_check: bool = False
    proposals: int = 0
    proposals_failed: int = 0
    requeued_extra_wait: FloatArray = field(default_factory=lambda: np.empty(0))
    requeued_outcome: IntArray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    # Leaving (sessions.leave_probability above 0): the players who left a match in play, the
    # games a player left (their match rows are among the others), those that ended with fewer
    # players than they started with, the seats their backfills opened; per seat filled, how
    # long it stood open; per fill, the completed game's quality. `backfill`: whether the mode's
    # games take backfills.
    leaving: bool = False
    backfill: bool = False
    leavers: int = 0
    games_left: int = 0
    games_short: int = 0
    seats_opened: int = 0
    fill_wait: FloatArray = field(default_factory=lambda: np.empty(0))
    fill_quality: FloatArray = field(default_factory=lambda: np.empty(0))

    @property
    def matches(self) -> int:
        return len(self.match_formed)


@dataclass(slots=True)
class Recorder:
    """A run as it happens: rows appended, columns built once at the end."""

    players: int
    # The columns of tickets(), and of matches(), as appended.
    ticket_columns: list[tuple[npt.NDArray[np.generic], ...]] = field(default_factory=list)
    match_columns: list[tuple[npt.NDArray[np.generic], ...]] = field(default_factory=list)
    turned_away: int = 0
    errors: list[str] = field(default_factory=list)
    ready_check: bool = False
    proposals: int = 0
    proposals_failed: int = 0
    requeued_columns: list[tuple[FloatArray, IntArray]] = field(default_factory=list)
    leaving: bool = False
    backfill: bool = False
    leavers: int = 0
    games_left: int = 0
    games_short: int = 0
    seats_opened: int = 0
    fill_wait: list[float] = field(default_factory=list)
    fill_quality: list[float] = field(default_factory=list)

    def ticket(
        self,
        enqueued: float,
        waited: float,
        outcome: int,
        players: int,
        skill: float,
        played: float,
        region: int,
        role: int = -1,
        seated: int = -1,
    ) -> None:
        self.tickets(
            np.array([enqueued]),
            np.array([waited]),
            np.array([outcome], dtype=np.int64),
            np.array([players], dtype=np.int64),
            np.array([skill]),
            np.array([played]),
            np.array([region], dtype=np.int64),
            np.array([role], dtype=np.int64),
            np.array([seated], dtype=np.int64),
        )

    def tickets(
        self,
        enqueued: FloatArray,
        waited: FloatArray,
        outcome: IntArray,
        players: IntArray,
        skill: FloatArray,
        played: FloatArray,
        region: IntArray,
        role: IntArray,
        seated: IntArray,
    ) -> None:
        """Tickets that left the queue (matched, expired or left at the end)."""
        self.ticket_columns.append((enqueued, waited, outcome, players, skill, played, region, role, seated))

    def requeued(self, extra_wait: FloatArray, outcome: IntArray) -> None:
        """Tickets a failed ready check had put back in the queue, as they leave it."""
        self.requeued_columns.append((extra_wait, outcome))

    def matches(
        self,
        formed: FloatArray,
        quality: FloatArray,
        gap: FloatArray,
        spread: FloatArray,
        outcome: IntArray,
        region: IntArray,
        players: IntArray,
    ) -> None:
        self.match_columns.append((formed, quality, gap, spread, outcome, region, players))

    def finish(
        self,
        clock: str,
        pairing: str,
        teams: int,
        duration: float,
        wall_seconds: float,
        players: PlayerColumns,
        lost_results: int = 0,
        roles: tuple[str, ...] = (),
    ) -> Run:
        tickets = [
            np.concatenate([part[i] for part in self.ticket_columns]) if self.ticket_columns else np.empty(0)
            for i in range(9)
        ]
        columns = [
            np.concatenate([part[i] for part in self.match_columns]) if self.match_columns else np.empty(0)
            for i in range(7)
        ]
        return Run(
            clock=clock,
            pairing=pairing,
            teams=teams,
            duration=duration,
            wall_seconds=wall_seconds,
            ticket_enqueued=tickets[0].astype(np.float64),
            ticket_waited=tickets[1].astype(np.float64),
            ticket_outcome=tickets[2].astype(np.int64),
            ticket_players=tickets[3].astype(np.int64),
            ticket_skill=tickets[4].astype(np.float64),
            ticket_played=tickets[5].astype(np.float64),
            ticket_region=tickets[6].astype(np.int64),
            ticket_role=tickets[7].astype(np.int64),
            ticket_seated=tickets[8].astype(np.int64),
            match_formed=columns[0].astype(np.float64),
            match_quality=columns[1].astype(np.float64),
            match_gap=columns[2].astype(np.float64),
            match_spread=columns[3].astype(np.float64),
            match_outcome=columns[4].astype(np.int64),
            match_region=columns[5].astype(np.int64),
            match_players=columns[6].astype(np.int64),
            skill=players.skill.copy(),
            games=players.games.copy(),
            score=players.score.copy(),
            mu=players.mu.copy(),
            sigma=players.sigma.copy(),
            elo=players.elo.copy(),
            checkpoints=players.checkpoints(),
            turned_away=self.turned_away,
            errors=tuple(self.errors),
            lost_results=lost_results,
            roles=roles,
            ready_check=self.ready_check,
            proposals=self.proposals,
            proposals_failed=self.proposals_failed,
            requeued_extra_wait=np.concatenate([np.empty(0)] + [c[0] for c in self.requeued_columns]).astype(
                np.float64
            ),
            requeued_outcome=np.concatenate(
                [np.empty(0, dtype=np.int64)] + [c[1] for c in self.requeued_columns]
            ).astype(np.int64),
            leaving=self.leaving,
            backfill=self.backfill,
            leavers=self.leavers,
            games_left=self.games_left,
            games_short=self.games_short,
            seats_opened=self.seats_opened,
            fill_wait=np.array(self.fill_wait, dtype=np.float64),
            fill_quality=np.array(self.fill_quality, dtype=np.float64),
        )


@dataclass(slots=True)
class PlayerColumns:
    """The players' state both clocks keep: true skill, visible ratings, Elo, tallies, and each
    player's ratings right after their CHECKPOINT_GAMES-th games."""

    skill: FloatArray
    mu: FloatArray
    sigma: FloatArray
    elo: FloatArray
    conservative_k: float
    games: IntArray = field(init=False)
    score: FloatArray = field(init=False)
    kept: FloatArray = field(init=False)  # (displayed, mu, elo, true skill) × players × checkpoints
    column: IntArray = field(init=False)  # games -> checkpoint column, -1 between checkpoints

    def __post_init__(self) -> None:
        count = len(self.skill)
        self.games = np.zeros(count, dtype=np.int64)
        self.score = np.zeros(count)
        self.kept = np.full((4, count, len(CHECKPOINT_GAMES)), np.nan)
        self.column = np.full(CHECKPOINT_GAMES[-1] + 1, -1, dtype=np.int64)
        self.column[list(CHECKPOINT_GAMES)] = np.arange(len(CHECKPOINT_GAMES))

    def finished(self, players: IntArray, score: FloatArray) -> None:
        """Count a finished match's players, whose new ratings are already written."""
        self.games[players] += 1
        self.score[players] += score
        played = self.games[players]
        column = np.where(
            played < len(self.column), self.column[np.minimum(played, len(self.column) - 1)], -1
        )
        keep = column >= 0
        if keep.any():
            who, where = players[keep], column[keep]
            self.kept[0, who, where] = self.mu[who] - self.conservative_k * self.sigma[who]
            self.kept[1, who, where] = self.mu[who]
            self.kept[2, who, where] = self.elo[who]
            self.kept[3, who, where] = self.skill[who]

    def checkpoints(self) -> tuple[Checkpoint, ...]:
        """The correlations at every checkpoint enough players reached."""
        least = min(CHECKPOINT_PLAYERS, max(2, len(self.skill) // 2))
        found = []
        for column, games in enumerate(CHECKPOINT_GAMES):
            reached = self.games >= games
            count = int(reached.sum())
            if count < least:
                break
            displayed, mu, elo, skill = (self.kept[k, reached, column] for k in range(4))
            found.append(
                Checkpoint(
                    games, count, spearman(displayed, skill), spearman(mu, skill), spearman(elo, skill)
                )
            )
        return tuple(found)
