"""The virtual clock: the whole loop in process, on simulated time (pure).

Players arrive, queue a ticket (their ratings read as the service reads them when a ticket
is queued), are matched, play, get rated and queue again after a pause, until their session
ends. Every `matchmaker.interval_seconds` of simulated time the lobby's loop calls the
service's own matchmaking on the waiting tickets, as `POST /v1/queues/{mode}/matchmake` does:
the pool as NumPy columns (app.matchmaking.pool.Pool) with each ticket's wait on the
simulated clock, its tickets' roles and avoid lists, and `form_matches` with the mode's shape
(its minimums and roles), relaxation and latency rule (`quality_matches`, the one call). A call's
matches may differ in size when the mode lets them shrink: each size is played and rated as a
batch of its own. Tickets past the mode's ticket lifetime expire and their
players give up. Under the mode's ready check (accept_timeout_s) every player answers a proposal
at once, declining with sessions.decline_probability; a declined proposal cancels the decliners'
tickets and puts the others back in the queue with their wait, as the service does. A match's
result is rated by the service's batch path (app.rating.levels, equal to one match at a time
within 1e-12) and becomes visible when the match ends. With sessions.leave_probability, a
match a player leaves is played out as a game of its own (leaving.py): it opens a backfill,
which each matchmaking call serves before forming new matches, as the service's does, with the
service's fill search (app.matchmaking.backfill.fill_backfills); the game is rated at its end
with every player's partial play.

Waits are exact to the matchmaking interval: a ticket queued between two calls waits for the
next. A call whose pool cannot change its answer is skipped: too few players for a match, or
nothing formed last time, nothing queued or gone since, and every wait past relax_seconds (the
thresholds no longer move). Results are deterministic for a scenario and seed.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.matchmaking.pool import Match, Pool
from app.matchmaking.proposals import form_matches
from app.rating.levels import Matches, rate_levels
from app.simulation.baselines import random_matches
from app.simulation.loop import LoopState
from app.simulation.population import Population, Streams
from app.simulation.record import DECLINED, EXPIRED, LEFT_AT_END, MATCHED, Run
from app.simulation.scenario import ModeSettings, Scenario
from app.simulation.sessions import Session
from app.simulation.truth import FIRST_WINS, SECOND_WINS, ranks, two_team_outcomes
from app.simulation.virtual_leaving import ARRIVE, END, GAME_END, LEAVE, READY, VirtualLeaving
from app.simulation.waiting import Waiting

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Progress = Callable[[float], None]

PAIRINGS = ("quality", "random")


def quality_matches(pool: Pool, mode: ModeSettings, max_matches: int) -> list[Match]:
    """The service's matchmaking for this mode (app.queues.service.matchmake's call)."""
    return form_matches(
        pool,
        mode.shape,
        mode.beta,
        mode.relaxation(),
        max_matches,
        mode.latency_rule(),
    )


@dataclass(slots=True)
class Playing:
    """A match in play: its players and what its result does to them once it ends."""

    players: IntArray
    mu: FloatArray
    sigma: FloatArray
    elo: FloatArray
    score: FloatArray
    sessions: list[int]


class VirtualClock(VirtualLeaving):
    def __init__(
        self,
        scenario: Scenario,
        population: Population,
        pairing: str = "quality",
        progress: Progress | None = None,
    ) -> None:
        if pairing not in PAIRINGS:
            raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
        self.scenario, self.population, self.pairing = scenario, population, pairing
        self.progress = progress or (lambda _: None)
        streams = Streams.of(scenario.seed)
        self.state = LoopState.of(scenario, population, streams)
        self.shuffles = streams.pairing
        self.mode = scenario.mode
        self.env = scenario.mode.environment()
        self.waiting = Waiting(len(population.regions), len(population) if self.state.avoid else 0)
        self.sessions: dict[int, Session] = {}
        self.playing: dict[int, Playing] = {}
        self.games = {}
        self.backfills = {}
        self.leaves = {}
        self.events: list[tuple[float, int, int, int]] = []
        self.serial = 0
        self.settled = False
        self.refused: Counter[str] = Counter()

    def run(self) -> Run:
        started = time.perf_counter()
        duration = self.scenario.duration_seconds
        interval = self.scenario.matchmaker.interval_seconds
        needed = self.mode.shape.minimum
        self._initial_sessions()
        self._push(self.state.behaviour.next_arrival(0.0), ARRIVE, 0)
        tick, now, shown = 0, 0.0, 0.0
        while now <= duration:
            self._events_until(now)
            self._expire(now)
            # A backfill may take a single ticket: with one open, any ticket is worth a call.
            worth_a_call = self.waiting.players >= needed or bool(self.backfills and self.waiting.count)
            if worth_a_call and not self.settled:
                self._matchmake(now)
                worth_a_call = self.waiting.players >= needed or bool(self.backfills and self.waiting.count)
            if now - shown >= duration / 500:
                shown = now
                self.progress(now / duration)
            if self.settled or not worth_a_call:
                # Nothing can form before the next event or expiry: go straight there.
                upcoming = self.events[0][0] if self.events else math.inf
                if self.waiting.count:
                    upcoming = min(
                        upcoming,
                        float(self.waiting.enqueued[: self.waiting.count].min())
                        + self.mode.ticket_ttl_seconds,
                    )
                tick = max(tick + 1, math.ceil(upcoming / interval)) if math.isfinite(upcoming) else tick + 1
                if not math.isfinite(upcoming) and not self.waiting.count:
                    break
            else:
                tick += 1
            now = tick * interval
        self._wind_down(duration)
        self.progress(1.0)
        errors = [
            f"{count} matches refused by the rating engine: {reason}"
            for reason, count in self.refused.items()
        ]
        self.state.recorder.errors.extend(errors)
        return self.state.recorder.finish(
            "virtual",
            self.pairing,
            self.mode.teams,
            duration,
            time.perf_counter() - started,
            self.state.columns,
            roles=self.state.roles.composition.roles if self.state.roles is not None else (),
        )

    # --- events ---

    def _push(self, at: float, kind: int, ref: int) -> None:
        if math.isfinite(at):
            self.serial += 1
            heapq.heappush(self.events, (at, self.serial, kind, ref))

    def _events_until(self, now: float) -> None:
        while self.events and self.events[0][0] <= now:
            at, _, kind, ref = heapq.heappop(self.events)
            if kind == ARRIVE:
                self._arrive(at)
                self._push(self.state.behaviour.next_arrival(at), ARRIVE, 0)
            elif kind == READY:
                self._queue(ref, at)
            elif kind == LEAVE:
                self._leave_game(ref, at)
            elif kind == GAME_END:
                self._end_game(ref, at)
            else:
                self._end(ref, at)

    def _initial_sessions(self) -> None:
        wanted = round(self.scenario.arrivals.initial_share * len(self.population))
        started = 0
        while started < wanted:
            players = self._arrive(0.0)
            if not players:
                break
            started += players

    def _arrive(self, at: float) -> int:
        """A party starts a session and queues; the number of players who came."""
        players = self.state.arrive()
        if not players:
            return 0
        members = np.array(players, dtype=np.int64)
        latency = None if self.population.latency is None else self.population.latency[members].max(axis=0)
        self.serial += 1
        self.sessions[self.serial] = Session(
            members, self.state.behaviour.session_matches(), latency, int(self.population.home[players[0]])
        )
        self._queue(self.serial, at)
        return len(players)

    def _queue(self, session_id: int, at: float) -> None:
        """A ticket for the session's party, with the ratings its players have now."""
        session = self.sessions[session_id]
        players = session.players
        members = players.tolist()
        roles = self.state.roles
        self.waiting.add(
            session_id,
            at,
            len(players),
            (
                float(self.state.columns.mu[players].sum()),
                float((self.state.columns.sigma[players] ** 2).sum()),
            ),
            session.latency,
            float(self.state.columns.skill[players].mean()),
            float(self.state.columns.games[players].mean()),
            session.home,
            members,
            roles.ticket(members) if roles is not None else None,
            self.state.avoid.of(members) if self.state.avoid else (),
            int(roles.first[members[0]]) if roles is not None and len(members) == 1 else -1,
        )
        self.settled = False

    def _leave(self, session_id: int) -> None:
        session = self.sessions.pop(session_id)
        self.state.offline.put_back(session.players.tolist())

    def _tickets_left(
        self, rows: IntArray, waited: FloatArray, outcome: int, seated: IntArray | None = None
    ) -> None:
        waiting = self.waiting
        self.state.recorder.tickets(
            waiting.enqueued[rows],
            waited,
            np.full(len(rows), outcome),
            waiting.size[rows],
            waiting.skill[rows],
            waiting.played[rows],
            waiting.home[rows],
            waiting.first_role[rows],
            seated if seated is not None else np.full(len(rows), -1, dtype=np.int64),
        )
        requeued = waiting.requeued[rows]
        again = np.isfinite(requeued)
        if again.any():
            left = waiting.enqueued[rows] + waited
            self.state.recorder.requeued(
                (left - requeued)[again], np.full(int(again.sum()), outcome, dtype=np.int64)
            )

    def _expire(self, now: float) -> None:
        count = self.waiting.count
        if not count:
            return
        ttl = self.mode.ticket_ttl_seconds
        lapsed = np.flatnonzero(now - self.waiting.enqueued[:count] >= ttl)
        if not len(lapsed):
            return
        self._tickets_left(lapsed, np.full(len(lapsed), ttl), EXPIRED)
        for row in lapsed.tolist():
            self._leave(int(self.waiting.session[row]))
        self.waiting.remove(lapsed)
        self.settled = False

    # --- matchmaking and play ---

    def _matchmake(self, now: float) -> None:
        """One matchmaking call: the open backfills served first, as the service's call
        serves them, then new matches from the tickets left."""
        served = self._serve_backfills(now) if self.backfills else False
        relax = self.mode.relax_seconds
        if self.waiting.players < self.mode.shape.minimum:
            self.settled = not served and self._relaxed(now)
            return
        pool = self.waiting.pool(now, self.population.regions)
        max_matches = self.scenario.matchmaker.max_matches
        if self.pairing == "quality":
            matches = quality_matches(pool, self.mode, max_matches)
        else:
            # Random pairing ignores roles and avoid lists; it shrinks matches as the mode does.
            shape = self.mode.shape
            matches = random_matches(
                pool,
                self.mode.teams,
                self.mode.team_size,
                self.mode.beta,
                self.shuffles,
                max_matches,
                (shape, self.mode.relax_seconds) if shape.flexible else None,
            )
        if not matches:
            # The thresholds stop moving once every wait (and every backfill's age) is past
            # relax_seconds: the same pool then gives the same (empty) answer until something
            # changes.
            self.settled = not served and bool((pool.waited >= relax).all()) and self._relaxed(now)
            return
        self._start(matches, now)

    def _start(self, matches: list[Match], now: float) -> None:
        """The call's matches begin: played out (their outcomes drawn now, their results seen
        when they end), size by size. Under the ready check only the accepted ones."""
        declined = np.empty(0, dtype=np.int64)
        if self.mode.accept_timeout_s is not None:
            matches, declined = self._ready_check(matches, now)
        taken = np.array([row for match in matches for row in match.rows], dtype=np.int64)
        left: list[tuple[Match, FloatArray]] = []
        if self.state.leaving is not None:
            matches, left = self._leavers(matches)
        sizes: dict[tuple[int, int], list[Match]] = {}
        for match in matches:
            shape = (len(match.teams), int(self.waiting.size[list(match.teams[0])].sum()))
            sizes.setdefault(shape, []).append(match)
        for (teams, size), batch in sizes.items():
            self._play(batch, teams, size, now)
        for match, shares in left:
            self._begin_game(match, shares, now)
        self.waiting.remove(np.concatenate([taken, declined]))
        self.settled = False

    def _ready_check(self, matches: list[Match], now: float) -> tuple[list[Match], IntArray]:
        """The ready check of the call's proposals: the accepted ones, and the rows of the
        tickets a decline cancelled. Every player answers at once, at the call that proposed the
        match (a real answer takes seconds, which would only shift every match's start, and with
        no declines the run is the run without the check). Each player declines with
        sessions.decline_probability; a proposal any player declines fails as the service fails
        it: the tickets of the players who declined are cancelled (a party's whole) and their
        sessions end, and every other ticket goes back to the queue with its original enqueue
        time, so its wait keeps counting (it stays in `waiting`, marked requeued)."""
        self.state.recorder.proposals += len(matches)
        chance = self.scenario.sessions.decline_probability
        none = np.empty(0, dtype=np.int64)
        if chance <= 0 or not matches:
            return matches, none
        waiting = self.waiting
        rows = np.array([row for match in matches for row in match.rows], dtype=np.int64)
        sizes = waiting.size[rows]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        declines = np.add.reduceat(
            (self.state.answers.random(int(sizes.sum())) < chance).astype(np.int64), starts
        )
        declining = dict(zip(rows.tolist(), (declines > 0).tolist(), strict=True))
        accepted: list[Match] = []
        cancelled: list[int] = []
        for match in matches:
            said_no = [row for row in match.rows if declining[row]]
            if not said_no:
                accepted.append(match)
                continue
            self.state.recorder.proposals_failed += 1
            cancelled += said_no
            for row in match.rows:
                if not declining[row] and math.isnan(waiting.requeued[row]):
                    waiting.requeued[row] = now
        if not cancelled:
            return accepted, none
        gone = np.array(cancelled, dtype=np.int64)
        self._tickets_left(gone, now - waiting.enqueued[gone], DECLINED)
        for row in cancelled:
            self._leave(int(waiting.session[row]))
        return accepted, gone

    def _play(self, matches: list[Match], teams: int, size: int, now: float) -> None:
        """Matches of one size (teams × size players): outcomes, new ratings, the record."""
        truth = self.scenario.truth
        sessions = self.waiting.session
        players = np.empty((len(matches), teams, size), dtype=np.int64)
        rows: list[int] = []
        for number, match in enumerate(matches):
            for team, tickets in enumerate(match.teams):
                members = [p for row in tickets for p in self.sessions[int(sessions[row])].players.tolist()]
                players[number, team] = members
            rows.extend(match.rows)
        skills = self.state.columns.skill[players].sum(axis=2)
        if teams == 2:
            outcome = two_team_outcomes(
                self.state.outcomes, skills[:, 0], skills[:, 1], size, truth.beta, truth.draw_probability
            )
            placed = np.stack(
                [np.where(outcome == SECOND_WINS, 2.0, 1.0), np.where(outcome == FIRST_WINS, 2.0, 1.0)],
                axis=1,
            )
        else:
            placed = ranks(self.state.outcomes, skills, size, truth.beta, truth.draw_probability)
            outcome = np.full(len(matches), -1, dtype=np.int64)
        mu_before, sigma_before = self.state.columns.mu[players], self.state.columns.sigma[players]
        mu_after, sigma_after = self._rate(mu_before, sigma_before, placed)
        tallied = self.state.tally(
            players,
            placed,
            outcome,
            mu_before,
            sigma_before,
            np.full(len(matches), now),
            np.array([match.quality for match in matches]),
            [match.region for match in matches],
        )
        taken = np.array(rows, dtype=np.int64)
        self._tickets_left(taken, now - self.waiting.enqueued[taken], MATCHED, self._seated(matches))
        for number, match in enumerate(matches):
            self.serial += 1
            self.playing[self.serial] = Playing(
                players[number].ravel(),
                mu_after[number].ravel(),
                sigma_after[number].ravel(),
                tallied.elo[number].ravel(),
                tallied.score[number].ravel(),
                [int(sessions[row]) for row in match.rows],
            )
            self._push(now + self.state.behaviour.match_length(), END, self.serial)

    def _seated(self, matches: list[Match]) -> IntArray | None:
        """Per row of the matches (in order), the role its solo player was seated in; -1 for a
        party's. None without roles."""
        if self.state.roles is None:
            return None
        roles = self.state.roles
        seated = [
            roles.index(names[0]) if len(names) == 1 else -1
            for match in matches
            for names in (match.roles or ((),) * len(match.rows))
        ]
        return np.array(seated, dtype=np.int64)

    def _rate(self, mu: FloatArray, sigma: FloatArray, placed: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Every match's players' ratings after it, by the service's batch rating: the matches
        share no player, so all of them are one level."""
        count, teams, size = mu.shape
        per_match = teams * size
        entries = count * per_match
        local_mu, local_sigma = mu.ravel().copy(), sigma.ravel().copy()
        rated = rate_levels(
            self.env,
            Matches(
                start=np.arange(0, entries + 1, per_match, dtype=np.int64),
                player=np.arange(entries, dtype=np.int64),
                team=np.tile(np.repeat(np.arange(teams, dtype=np.int64), size), count),
                rank=np.repeat(placed.ravel(), size),
                weight=np.ones(entries),
                coefficient=np.full(entries, np.nan),
            ),
            local_mu,
            local_sigma,
        )
        for reason in rated.refused.values():
            self.refused[reason] += 1
        return local_mu.reshape(mu.shape), local_sigma.reshape(sigma.shape)

    def _end(self, ref: int, at: float) -> None:
        """A match ends: its result becomes visible, its players pause or leave."""
        play = self.playing.pop(ref)
        self.state.seen(play.players, play.mu, play.sigma, play.elo, play.score)
        for session_id in play.sessions:
            session = self.sessions[session_id]
            session.remaining -= 1
            if session.remaining > 0:
                self._push(at + self.state.behaviour.pause(), READY, session_id)
            else:
                self._leave(session_id)

    def _wind_down(self, duration: float) -> None:
        """At the end: matches in play finish (their results count), queued tickets are left."""
        rows = np.arange(self.waiting.count, dtype=np.int64)
        self._tickets_left(rows, duration - self.waiting.enqueued[rows], LEFT_AT_END)
        self.waiting.remove(rows)
        while self.events:
            at, _, kind, ref = heapq.heappop(self.events)
            if kind == END:
                self._end(ref, at)
            elif kind == GAME_END:
                # A leave past the run's end is not played: the queue is closed by then.
                self._end_game(ref, at)


def run_virtual(
    scenario: Scenario, population: Population, pairing: str = "quality", progress: Progress | None = None
) -> Run:
    """One run of the loop on simulated time."""
    return VirtualClock(scenario, population, pairing, progress).run()
