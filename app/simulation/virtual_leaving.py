"""The virtual clock's games a player left and their backfills (pure; leaving.py's model).

`VirtualLeaving` is the part of `VirtualClock` (virtual.py) that plays sessions.leave_probability:
a match someone will leave is split off as it starts (`_leavers`) and played as a `Game`
(`_begin_game`); a leave ends the player's session and opens or grows the game's backfill
(`_leave_game`); each matchmaking call serves the open backfills first, oldest first, with the
service's fill search, as `POST /v1/queues/{mode}/matchmake` does (`_serve_backfills`, `_join`);
at its end the game is rated with every player's partial play (`_end_game`).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from app.matchmaking.backfill import fill_backfills
from app.matchmaking.pool import Match
from app.rating import TrueSkill
from app.simulation.leaving import Game, Seat, leave_moment, rate_partial, share_left
from app.simulation.loop import LoopState
from app.simulation.population import Population
from app.simulation.record import MATCHED
from app.simulation.scenario import ModeSettings, Scenario
from app.simulation.sessions import Session
from app.simulation.truth import DRAW, FIRST_WINS, SECOND_WINS, partial_places
from app.simulation.waiting import Waiting

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# The virtual clock's events.
ARRIVE, READY, END, LEAVE, GAME_END = 0, 1, 2, 3, 4


class VirtualLeaving:
    """Leaving and backfill on the virtual clock (mixed into VirtualClock, which has the state)."""

    scenario: Scenario
    population: Population
    mode: ModeSettings
    env: TrueSkill
    state: LoopState
    waiting: Waiting
    sessions: dict[int, Session]
    serial: int
    settled: bool
    refused: Counter[str]
    # Matches a player left, those with an open backfill (oldest first), and each leave to come:
    # its game and seat.
    games: dict[int, Game]
    backfills: dict[int, Game]
    leaves: dict[int, tuple[int, int]]

    if TYPE_CHECKING:
        # VirtualClock's own.
        def _push(self, at: float, kind: int, ref: int) -> None: ...
        def _leave(self, session_id: int) -> None: ...
        def _tickets_left(
            self, rows: IntArray, waited: FloatArray, outcome: int, seated: IntArray | None = None
        ) -> None: ...
        def _seated(self, matches: list[Match]) -> IntArray | None: ...
        def _ready_check(self, matches: list[Match], now: float) -> tuple[list[Match], IntArray]: ...

    def _relaxed(self, now: float) -> bool:
        """Whether every wait and every open backfill's age is past relax_seconds."""
        relax = self.mode.relax_seconds
        waits = now - self.waiting.enqueued[: self.waiting.count]
        return bool((waits >= relax).all()) and all(
            game.backfill_since is not None and now - game.backfill_since >= relax
            for game in self.backfills.values()
        )

    def _leavers(self, matches: list[Match]) -> tuple[list[Match], list[tuple[Match, FloatArray]]]:
        """The matches nobody will leave, and those a player will, with every player's share
        of the match played before leaving (NaN: stays)."""
        leaving = self.state.leaving
        assert leaving is not None
        kept: list[Match] = []
        left: list[tuple[Match, FloatArray]] = []
        for match in matches:
            shares = leaving.draw(int(self.waiting.size[list(match.rows)].sum()))
            if share_left(shares):
                left.append((match, shares))
            else:
                kept.append(match)
        return kept, left

    def _begin_game(self, match: Match, shares: FloatArray, now: float) -> None:
        """A match a player will leave begins: played out as a game of its own, its outcome
        and ratings decided when it ends, from who played how much of it."""
        sessions = self.waiting.session
        ends = now + self.state.behaviour.match_length()
        seats = [
            Seat(player, team, int(sessions[row]), now, ends)
            for team, rows in enumerate(match.teams)
            for row in rows
            for player in self.sessions[int(sessions[row])].players.tolist()
        ]
        self.serial += 1
        ref = self.serial
        self.games[ref] = Game(
            now,
            ends,
            int(self.waiting.size[list(match.teams[0])].sum()),
            match.quality,
            match.region,
            seats,
            [int(sessions[row]) for row in match.rows],
            [[] for _ in match.teams],
        )
        rows = np.array(match.rows, dtype=np.int64)
        self._tickets_left(rows, now - self.waiting.enqueued[rows], MATCHED, self._seated([match]))
        self._push(ends, GAME_END, ref)
        self._schedule_leaves(ref, list(range(len(seats))), shares, now)

    def _schedule_leaves(self, ref: int, seats: list[int], shares: FloatArray, since: float) -> None:
        game = self.games[ref]
        for seat, share in zip(seats, shares.tolist(), strict=True):
            if math.isfinite(share):
                self.serial += 1
                self.leaves[self.serial] = (ref, seat)
                self._push(leave_moment(since, game.ends, share), LEAVE, self.serial)

    def _leave_game(self, key: int, at: float) -> None:
        """A player leaves a game in play: their session ends (they are offline once the game
        is over), and where the mode takes backfills the game opens one for the seat."""
        ref, number = self.leaves.pop(key)
        game = self.games[ref]
        seat = game.seats[number]
        seat.left = at
        game.gone.append(seat.player)
        recorder = self.state.recorder
        recorder.leavers += 1
        session = self.sessions[seat.session]
        rest = session.players[session.players != seat.player]
        if len(rest):
            session.players = rest
            if self.population.latency is not None:
                session.latency = self.population.latency[rest].max(axis=0)
        else:
            del self.sessions[seat.session]
            game.sessions.remove(seat.session)
        # The service takes a backfill only for a roster of the mode's teams (app.queues.backfills).
        if recorder.backfill and len(game.open_since) == self.mode.teams:
            before = game.open_seats()
            game.open_backfill(at, self.mode.team_size)
            recorder.seats_opened += game.open_seats() - before
            self.backfills.setdefault(ref, game)
            self.settled = False

    def _serve_backfills(self, now: float) -> bool:
        """The open backfills, oldest first, filled from the waiting tickets by the service's
        fill search (tickets with avoid lists left out, as the service leaves them); under the
        ready check the joining players answer as a new match's do, and a decline leaves the
        seats open. Whether any ticket left the queue."""
        waiting = self.waiting
        if not waiting.count:
            return False
        refs = list(self.backfills)
        games = [self.backfills[ref] for ref in refs]
        pool = waiting.pool(now, self.population.regions)
        columns = self.state.columns
        usable = np.array([not avoided for avoided in waiting.avoid], dtype=np.bool_)
        fills = fill_backfills(
            pool,
            [game.opening(columns.mu, columns.sigma, now) for game in games],
            self.mode.beta,
            self.mode.relaxation(),
            self.mode.latency_rule(),
            usable,
        )
        proposed = {
            ref: Match(fill.teams, fill.quality, float(pool.waited[list(fill.rows)].max()), game.region)
            for ref, game, fill in zip(refs, games, fills, strict=True)
            if fill is not None
        }
        if not proposed:
            return False
        declined = np.empty(0, dtype=np.int64)
        if self.mode.accept_timeout_s is not None:
            accepted, declined = self._ready_check(list(proposed.values()), now)
            kept = {id(match) for match in accepted}
            proposed = {ref: match for ref, match in proposed.items() if id(match) in kept}
        for ref, match in proposed.items():
            self._join(ref, match, now)
        taken = np.array([row for match in proposed.values() for row in match.rows], dtype=np.int64)
        self._tickets_left(taken, now - waiting.enqueued[taken], MATCHED)
        waiting.remove(np.concatenate([taken, declined]))
        self.settled = False
        return True

    def _join(self, ref: int, match: Match, now: float) -> None:
        """A fill's players take the game's open seats (each the oldest of its team's), for
        the rest of it; a game with no seat left open deletes its backfill."""
        game = self.games[ref]
        recorder = self.state.recorder
        first = len(game.seats)
        for team, rows in enumerate(match.teams):
            for row in rows:
                session_id = int(self.waiting.session[row])
                game.sessions.append(session_id)
                for player in self.sessions[session_id].players.tolist():
                    game.seats.append(Seat(player, team, session_id, now, game.ends))
                    recorder.fill_wait.append(now - game.open_since[team].pop(0))
        recorder.fill_quality.append(match.quality)
        if not game.open_seats():
            del self.backfills[ref]
            game.backfill_since = None  # a later leave creates a new one
        joined = list(range(first, len(game.seats)))
        leaving = self.state.leaving
        assert leaving is not None
        self._schedule_leaves(ref, joined, leaving.draw(len(joined)), now)

    def _end_game(self, ref: int, at: float) -> None:
        """A game a player left ends: its backfill goes, its outcome is drawn and it is rated
        with every player's share of it, and its players pause or leave."""
        game = self.games.pop(ref)
        self.backfills.pop(ref, None)
        recorder = self.state.recorder
        recorder.games_left += 1
        recorder.games_short += game.short()
        weights_of = game.weights()
        seats = game.teams()
        if all(len(team) for team in seats):
            self._rate_game(
                game,
                [np.array([game.seats[n].player for n in team], dtype=np.int64) for team in seats],
                [weights_of[team] for team in seats],
            )
        else:
            self.refused["a team of a game had nobody play any of it"] += 1
        for session_id in game.sessions:
            session = self.sessions[session_id]
            session.remaining -= 1
            if session.remaining > 0:
                self._push(at + self.state.behaviour.pause(), READY, session_id)
            else:
                self._leave(session_id)
        self.state.offline.put_back(game.gone)

    def _rate_game(self, game: Game, teams: list[IntArray], weights: list[FloatArray]) -> None:
        truth, columns = self.scenario.truth, self.state.columns
        strength = np.array(
            [float((columns.skill[team] * w).sum()) for team, w in zip(teams, weights, strict=True)]
        )
        noise = np.array([math.sqrt(float((w * w).sum())) * truth.beta for w in weights])
        placed = partial_places(
            self.state.outcomes, strength, noise, game.team_size, truth.beta, truth.draw_probability
        )
        outcome = -1
        if len(teams) == 2:
            outcome = FIRST_WINS if placed[0] < placed[1] else SECOND_WINS if placed[0] > placed[1] else DRAW
        mu = [columns.mu[team] for team in teams]
        sigma = [columns.sigma[team] for team in teams]
        after_mu, after_sigma = np.concatenate(mu), np.concatenate(sigma)
        rated = rate_partial(self.env, weights, placed, after_mu, after_sigma)
        for reason in rated.refused.values():
            self.refused[reason] += 1
        tallied = self.state.tally_partial(
            teams, weights, placed, outcome, mu, sigma, game.started, game.quality, game.region
        )
        self.state.seen(np.concatenate(teams), after_mu, after_sigma, tallied.elo, tallied.score)
