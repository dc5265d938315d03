"""Replay: re-rate a mode's whole history with its current parameters, level by level.

Every non-void match is rated again in played_at order (then recording order), each player
starting from their seed (an admin override) or the mode's prior. The rating is
app/rating/levels.py's: the matches cut into levels (a match's level is one past the levels
of its players' previous matches), two-team levels through the NumPy batch path, every other
match through `rate_match` on its own; the match pipeline (app.matches.recording) rates every
group of posted matches the same way.

The whole history is held as flat arrays (`ReplayMatches`): one row per match, one per
participant, players by index; nothing holds a Python object per match until the stored
responses are written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from app import collection
from app.ids import is_pseudonym
from app.matches.responses import RatedEntries, response_data
from app.matches.schemas import wire_json
from app.matches.tiering import Walked, walk
from app.rating import TrueSkill
from app.rating.levels import Drift, Matches, rate_levels
from app.rating.tiers import Tiers

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NEVER = np.iinfo(np.int64).min  # last_played of a player without a rated match


@dataclass(slots=True)
class ReplayMatches:
    """Matches in replay order: per match its key, id and time, and `entries`, its
    participants as app.rating.levels lays them out, except that `entries.player` indexes
    `names` (rating then maps each name to its place in the ratings)."""

    pks: Index
    match_ids: list[str]
    played_us: Index  # microseconds since 1970-01-01 UTC
    entries: Matches
    names: list[str]

    @property
    def matches(self) -> int:
        return len(self.pks)


@dataclass(slots=True)
class State:
    """Every player's current rating and counters, by index."""

    names: list[str]
    mu: Array
    sigma: Array
    matches: Index
    wins: Index
    losses: Index
    draws: Index
    last_us: Index
    index: dict[str, int] = field(default_factory=dict)
    tier: list[int | None] = field(default_factory=list)

    def adopt(self, names: list[str], env: TrueSkill, seeds: dict[str, tuple[float, float]]) -> Index:
        """State indices of `names`; players not yet here start at their seed or the prior."""
        new = [name for name in dict.fromkeys(names) if name not in self.index]
        if new:
            start = [seeds.get(name, (env.mu, env.sigma)) for name in new]
            self.index.update((name, len(self.names) + i) for i, name in enumerate(new))
            self.names.extend(new)
            zeros = np.zeros(len(new), dtype=np.int64)
            self.mu = np.concatenate((self.mu, [mu for mu, _ in start]))
            self.sigma = np.concatenate((self.sigma, [sigma for _, sigma in start]))
            self.matches, self.wins = (
                np.concatenate((self.matches, zeros)),
                np.concatenate((self.wins, zeros)),
            )
            self.losses = np.concatenate((self.losses, zeros))
            self.draws = np.concatenate((self.draws, zeros))
            self.last_us = np.concatenate((self.last_us, np.full(len(new), NEVER, dtype=np.int64)))
            self.tier.extend([None] * len(new))
        index = self.index
        return np.array([index[name] for name in names], dtype=np.int64)


def start(env: TrueSkill, players: list[str], seeds: dict[str, tuple[float, float]]) -> State:
    """Every rated player at their seed or the prior, with no matches."""
    empty = np.zeros(0, dtype=np.int64)
    state = State([], np.zeros(0), np.zeros(0), empty, empty, empty, empty, empty)
    state.adopt(players, env, seeds)
    return state


@dataclass(slots=True)
class Rated:
    """Per entry the rating before and after; per match the quality and whether it was
    rated (a match the engine refuses is skipped and named)."""

    before_mu: Array
    before_sigma: Array
    after_mu: Array
    after_sigma: Array
    quality: Array
    rated: Mask
    skipped: list[str]
    player: Index  # each entry's player, as a State index
    walked: Walked | None = None  # placements and tiers (app.matches.tiering)


@dataclass(frozen=True, slots=True)
class Ranking:
    """What a mode shows of a rating beside it: drift per day (app.rating.drift), placement
    matches and tiers, and k of the conservative estimate the tiers read."""

    k: float = 3.0
    drift_per_day: float = 0.0
    placements: int = 0
    tiers: Tiers | None = None


def rate(
    env: TrueSkill,
    history: ReplayMatches,
    state: State,
    seeds: dict[str, tuple[float, float]],
    progress: Callable[[float], None] = lambda _: None,
    ranking: Ranking = Ranking(),
) -> Rated:
    """Rate `history` on top of `state` (updated in place), level by level (app/rating/levels.py),
    with the drift, placements and tiers of `ranking`, as the match pipeline rates posts."""
    named = history.entries
    player = state.adopt(history.names, env, seeds)[named.player] if len(named.player) else named.player
    matches = replace(named, player=player)
    drift = (
        Drift(ranking.drift_per_day, history.played_us, state.last_us) if ranking.drift_per_day > 0 else None
    )
    done = rate_levels(env, matches, state.mu, state.sigma, progress, drift)
    skipped = [f"{history.match_ids[i]}: {reason}" for i, reason in sorted(done.refused.items())]
    out = Rated(
        done.before_mu, done.before_sigma, done.after_mu, done.after_sigma, done.quality, done.rated,
        skipped, player,
    )  # fmt: skip
    if history.matches and (ranking.tiers is not None or ranking.placements > 0):
        count = history.matches
        out.walked = walk(
            matches.start.tolist(),
            player.tolist(),
            done.rated.tolist(),
            done.after_mu,
            done.after_sigma,
            [ranking.k] * count,
            [ranking.tiers] * count,
            [ranking.placements] * count,
            state.matches.tolist(),
            state.tier,
        )
    if history.matches:
        _count(history, player, out.rated, done.wins, done.losses, done.draws, state)
    return out


def _count(
    history: ReplayMatches, player: Index, rated: Mask, wins: Index, losses: Index, draws: Index, state: State
) -> None:
    match_of = np.repeat(np.arange(history.matches, dtype=np.int64), np.diff(history.entries.start))
    counted = rated[match_of]
    who = player[counted]
    size = len(state.names)
    state.matches += np.bincount(who, minlength=size)
    state.wins += np.bincount(who, weights=wins[counted], minlength=size).astype(np.int64)
    state.losses += np.bincount(who, weights=losses[counted], minlength=size).astype(np.int64)
    state.draws += np.bincount(who, weights=draws[counted], minlength=size).astype(np.int64)
    np.maximum.at(state.last_us, who, history.played_us[match_of][counted])


def instant(us: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=us)


def responses(
    mode: str, k: float, history: ReplayMatches, rated: Rated, ranking: Ranking = Ranking()
) -> list[tuple[int, float, str]]:
    """(match pk, quality, stored response) of every rated match, in replay order."""
    with collection.paused():  # objects without cycles, millions of them (app/collection.py)
        return _responses(mode, k, history, rated, ranking)


def _responses(
    mode: str, k: float, history: ReplayMatches, rated: Rated, ranking: Ranking
) -> list[tuple[int, float, str]]:
    moments: dict[int, dt.datetime] = {}
    played_at = [moments.get(us) or moments.setdefault(us, instant(us)) for us in history.played_us.tolist()]
    count = history.matches
    built = response_data(
        RatedEntries(
            match_id=history.match_ids,
            mode=[mode] * count,
            played_at=played_at,
            quality=rated.quality.tolist(),
            conservative_k=[k] * count,
            start=history.entries.start.tolist(),
            player_id=[history.names[p] for p in history.entries.player.tolist()],
            team=history.entries.team.tolist(),
            before_mu=rated.before_mu,
            before_sigma=rated.before_sigma,
            after_mu=rated.after_mu,
            after_sigma=rated.after_sigma,
            tiers=[ranking.tiers] * count,
            placements=[ranking.placements] * count,
            walked=rated.walked,
        )
    )
    return [
        (pk, quality, wire_json(response).decode())
        for pk, quality, done, response in zip(
            history.pks.tolist(), rated.quality.tolist(), rated.rated.tolist(), built, strict=True
        )
        if done
    ]


@dataclass(slots=True)
class NewRating:
    """A player's rating and counters after the replay, as the swap writes them."""

    player_id: str
    mu: float
    sigma: float
    matches: int
    wins: int
    losses: int
    draws: int
    last_played_at: dt.datetime | None
    tier: int | None = None


def new_ratings(state: State) -> list[NewRating]:
    """The ratings to write: an erased player's pseudonym is rated as a player of its own, so
    the others come out as before the erasure, but gets no rating (and no leaderboard place)."""
    return [
        NewRating(
            name,
            mu,
            sigma,
            matches,
            wins,
            losses,
            draws,
            None if last == NEVER else instant(last),
            tier,
        )
        for name, mu, sigma, matches, wins, losses, draws, last, tier in zip(
            state.names,
            state.mu.tolist(),
            state.sigma.tolist(),
            state.matches.tolist(),
            state.wins.tolist(),
            state.losses.tolist(),
            state.draws.tolist(),
            state.last_us.tolist(),
            state.tier,
            strict=True,
        )
        if not is_pseudonym(name)
    ]
