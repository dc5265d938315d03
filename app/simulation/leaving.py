"""Players leaving a match in play, and the backfill that refills their seats (pure).

Each player of a match leaves it with sessions.leave_probability, at a moment uniform over
the time they would play (`Leaving.draw`), which ends their session. A match someone leaves
becomes a `Game`: who sat in which team from when to when. Where the service would take a
backfill for it (a mode without roles, the game with all the mode's teams; app.queues.backfills
refuses other rosters) the game opens one at its first leave, as a lobby posts
`POST /v1/queues/{mode}/backfills`, and a later leave adds its seat to it, as a `PUT` of the
roster does (keeping its creation time, so its age and the threshold it relaxes to go on).
Like the service, a backfill asks for every seat its teams are short of the mode's team_size.
The game's players are rated at its end with their partial play: each player's weight is the
share of the game they played (the rating engine's `weight`), and the outcome is drawn from
the same partial play (truth.partial_places).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.matchmaking.opening import Opening
from app.rating import TrueSkill
from app.rating.levels import Matches, Rated, rate_levels

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Leaving:
    """Who leaves a match in play and when, from the leaving stream."""

    def __init__(self, chance: float, rng: np.random.Generator) -> None:
        self.chance, self.rng = chance, rng

    def draw(self, players: int) -> FloatArray:
        """Per player, the share of their time in the match they play before leaving, uniform
        over it; NaN for those who stay to the end."""
        leaves = self.rng.random(players) < self.chance
        shares = self.rng.random(players)
        drawn: FloatArray = np.where(leaves, shares, np.nan)
        return drawn


@dataclass(slots=True)
class Seat:
    """One player's time in a game (simulated seconds): from `joined` to `left` (the game's
    end while they stay), in `team`, from `session`."""

    player: int
    team: int
    session: int
    joined: float
    left: float


@dataclass(slots=True)
class Game:
    """A match in play that a player left: its seats, its sessions, and its backfill: per team,
    when each of its open seats opened (oldest first), and when the backfill was created (None:
    the game has none)."""

    started: float
    ends: float
    team_size: int  # players a team at the start (the full game's, for its draw margin)
    quality: float
    region: str | None
    seats: list[Seat]
    sessions: list[int]
    open_since: list[list[float]]
    backfill_since: float | None = None
    gone: list[int] = field(default_factory=list)  # leavers: offline once the game ends

    def present(self, team: int) -> list[int]:
        """The players seated in the team now (those who have not left)."""
        return [seat.player for seat in self.seats if seat.team == team and seat.left >= self.ends]

    def short(self) -> bool:
        """Whether fewer players are seated than the game started with."""
        started = sum(seat.joined <= self.started for seat in self.seats)
        return sum(len(self.present(team)) for team in range(len(self.open_since))) < started

    def open_seats(self) -> int:
        return sum(len(since) for since in self.open_since)

    def open_backfill(self, at: float, full: int) -> None:
        """A player left at `at`: the backfill opens (or grows) for every seat each team is
        short of `full` players (the mode's team_size)."""
        if self.backfill_since is None:
            self.backfill_since = at
        for team, since in enumerate(self.open_since):
            since.extend([at] * (full - len(self.present(team)) - len(since)))

    def opening(self, mu: FloatArray, sigma: FloatArray, now: float) -> Opening:
        """The backfill as the service's fill search sees it: per team its seated players'
        Σ mu and Σ sigma² (read as a roster's are: their ratings now, unchanged in play), their
        count and the open seats; its region, and its age."""
        teams = [self.present(team) for team in range(len(self.open_since))]
        since = self.backfill_since if self.backfill_since is not None else now
        return Opening(
            np.array([float(mu[team].sum()) for team in teams]),
            np.array([float((sigma[team] ** 2).sum()) for team in teams]),
            np.array([len(team) for team in teams], dtype=np.int64),
            np.array([len(open_seats) for open_seats in self.open_since], dtype=np.int64),
            0,
            self.region,
            now - since,
        )

    def weights(self) -> FloatArray:
        """Per seat, the share of the game played (partial play)."""
        length = self.ends - self.started
        return np.array([(seat.left - seat.joined) / length if length > 0 else 1.0 for seat in self.seats])

    def teams(self) -> list[IntArray]:
        """Per team, the seats' positions in `seats` of its players with some play."""
        played = self.weights() > 0
        return [
            np.array(
                [n for n, seat in enumerate(self.seats) if seat.team == team and played[n]], dtype=np.int64
            )
            for team in range(len(self.open_since))
        ]


def share_left(shares: FloatArray) -> bool:
    """Whether any of a match's players leaves it (`Leaving.draw`'s shares)."""
    return not bool(np.isnan(shares).all()) if len(shares) else False


def leave_moment(start: float, end: float, share: float) -> float:
    """When a player who plays `share` of their time from `start` to `end` leaves."""
    return start + share * (end - start) if math.isfinite(share) else end


def rate_partial(
    env: TrueSkill, weights: Sequence[FloatArray], placed: FloatArray, mu: FloatArray, sigma: FloatArray
) -> Rated:
    """One game rated by the service's batch rating with partial play: per team its players'
    weights, the teams' places, and the players' ratings flat in team order (`mu`, `sigma`,
    updated in place)."""
    counts = [len(team) for team in weights]
    entries = sum(counts)
    return rate_levels(
        env,
        Matches(
            start=np.array([0, entries], dtype=np.int64),
            player=np.arange(entries, dtype=np.int64),
            team=np.repeat(np.arange(len(counts), dtype=np.int64), counts),
            rank=np.repeat(placed, counts),
            weight=np.concatenate(weights),
            coefficient=np.full(entries, np.nan),
        ),
        mu,
        sigma,
    )
