"""Replay: re-rate a mode's whole history with its current parameters, level by level.

Every non-void match is rated again in played_at order (then recording order), each player
starting from their seed (an admin override) or the mode's prior. One at a time that is one
engine call per match; here the matches are cut into **levels** instead, as the history
engine cuts its passes (app/rating/history/schedule.py): a match's level is one past the
levels of its players' previous matches. A level's matches share no player and see only
lower levels, so rating level after level, all of a level's matches at once, gives what one
at a time gives. A level's two-team matches of unit weights go through the NumPy batch path
(app/rating/batch.py) in one call per team shape, when the mode's model is one it covers
(`TrueSkill.batch_covers`); every other match (three or more teams, partial play, another tie
model or team function) goes through `rate_match` on its own.

The whole history is held as flat arrays (`ReplayMatches`): one row per match, one per
participant, players by index; nothing holds a Python object per match until the stored
responses are written.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.ids import is_pseudonym
from app.matches.service import response_json
from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.batch import two_team_quality_batch
from app.rating.history.schedule import chain_levels
from app.rating.match import MatchTeams, rate_match

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NEVER = np.iinfo(np.int64).min  # last_played of a player without a rated match


@dataclass(slots=True)
class ReplayMatches:
    """Matches in replay order. Match i's participants are entries start[i]:start[i+1],
    team by team; `player` indexes `names`; a missing coefficient is NaN."""

    pks: Index
    match_ids: list[str]
    played_us: Index  # microseconds since 1970-01-01 UTC
    start: Index
    player: Index
    team: Index
    rank: Array
    weight: Array
    coefficient: Array
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


def rate(
    env: TrueSkill,
    history: ReplayMatches,
    state: State,
    seeds: dict[str, tuple[float, float]],
    progress: Callable[[float], None] = lambda _: None,
) -> Rated:
    """Rate `history` on top of `state` (updated in place), level by level."""
    n, entries = history.matches, len(history.player)
    player = state.adopt(history.names, env, seeds)[history.player] if entries else history.player
    out = Rated(
        np.zeros(entries), np.zeros(entries), np.zeros(entries), np.zeros(entries), np.zeros(n),
        np.ones(n, dtype=bool), [], player,
    )  # fmt: skip
    if n == 0:
        return out
    start, team, weight = history.start, history.team, history.weight
    first = start[:-1]
    size = np.diff(start)
    teams = np.maximum.reduceat(team, first) + 1
    first_team = np.add.reduceat((team == 0).astype(np.int64), first)
    second_first = np.minimum(first + first_team, start[1:] - 1)
    first_rank, second_rank = history.rank[first], history.rank[second_first]
    tie = first_rank == second_rank
    winner_first = first_rank <= second_rank
    batch = (
        (teams == 2) & np.minimum.reduceat(weight == 1.0, first) & ~(tie & (env.draw_z <= 0.0))
        if env.batch_covers
        else np.zeros(n, dtype=bool)
    )
    # (winners, losers) team sizes of each batch match, and where each team's entries start.
    winners = np.where(winner_first, first_team, size - first_team)
    losers = size - winners
    winner_at = np.where(winner_first, first, first + first_team)
    loser_at = np.where(winner_first, first + first_team, first)
    widest = int(size.max())
    shape = np.where(batch, 1 + winners * (widest + 1) + losers, 0)
    level, _ = chain_levels(
        start, player, np.full(len(state.names), -1, dtype=np.int64), len(state.names), [(0, n)]
    )
    order = np.lexsort((shape, level))
    key = level[order] * ((widest + 1) ** 2 + 1) + shape[order]
    runs = np.flatnonzero(np.diff(key)) + 1
    bounds = [0, *runs.tolist(), n]
    mu, sigma = state.mu, state.sigma
    columns = np.arange(widest, dtype=np.int64)
    wins = np.zeros(entries, dtype=np.int64)
    losses = np.zeros(entries, dtype=np.int64)
    draws = np.zeros(entries, dtype=np.int64)
    every = max(1, (len(bounds) - 1) // 100)
    for run, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if run % every == 0:
            progress(lo / n)
        chosen = order[lo:hi]
        if shape[chosen[0]] == 0:
            for i in chosen.tolist():
                _rate_one(env, history, player, i, out, wins, losses, draws, mu, sigma)
            continue
        head = chosen[0]
        w_entries = winner_at[chosen][:, None] + columns[: winners[head]]
        l_entries = loser_at[chosen][:, None] + columns[: losers[head]]
        w_players, l_players = player[w_entries], player[l_entries]
        wm, ws, lm, ls = mu[w_players], sigma[w_players], mu[l_players], sigma[l_players]
        drawn = tie[chosen]
        new_wm, new_ws, new_lm, new_ls = env.rate_two_team_batch(
            wm, ws, lm, ls, drawn if drawn.any() else None
        )
        out.before_mu[w_entries], out.before_sigma[w_entries] = wm, ws
        out.before_mu[l_entries], out.before_sigma[l_entries] = lm, ls
        out.after_mu[w_entries], out.after_sigma[w_entries] = new_wm, new_ws
        out.after_mu[l_entries], out.after_sigma[l_entries] = new_lm, new_ls
        mu[w_players], sigma[w_players] = new_wm, new_ws
        mu[l_players], sigma[l_players] = new_lm, new_ls
    _batch_outcomes(env, history, batch, tie, winner_first, first_team, out, wins, losses, draws)
    _count(history, player, out.rated, wins, losses, draws, state)
    progress(1.0)
    return out


def _rate_one(
    env: TrueSkill,
    history: ReplayMatches,
    player: Index,
    i: int,
    out: Rated,
    wins: Index,
    losses: Index,
    draws: Index,
    mu: Array,
    sigma: Array,
) -> None:
    """One match through `rate_match`, as a single post rates it."""
    lo, hi = int(history.start[i]), int(history.start[i + 1])
    ids: list[list[str]] = []
    ratings: list[list[Rating]] = []
    weights: list[list[float]] = []
    coefficients: list[list[float]] = []
    ranks: list[float] = []
    for e in range(lo, hi):
        t = int(history.team[e])
        if t == len(ids):
            ids.append([])
            ratings.append([])
            weights.append([])
            coefficients.append([])
            ranks.append(float(history.rank[e]))
        p = int(player[e])
        ids[t].append(history.names[int(history.player[e])])
        ratings[t].append(Rating(float(mu[p]), float(sigma[p])))
        weights[t].append(float(history.weight[e]))
        c = float(history.coefficient[e])
        coefficients[t].append(1.0 if c != c else c)  # NaN: not given, 1 in a weighted mode
    teams = MatchTeams(
        ids, ratings, ranks, weights, coefficients if env.team_performance == "weighted" else None
    )
    try:
        rated = rate_match(env, teams)
    except RatingInputError as exc:
        out.rated[i] = False
        out.skipped.append(f"{history.match_ids[i]}: {exc}")
        return
    out.quality[i] = rated.quality
    for e, r in zip(range(lo, hi), rated.players, strict=True):
        p = int(player[e])
        out.before_mu[e], out.before_sigma[e] = r.before.mu, r.before.sigma
        out.after_mu[e], out.after_sigma[e] = r.after.mu, r.after.sigma
        mu[p], sigma[p] = r.after.mu, r.after.sigma
        wins[e], losses[e], draws[e] = r.win, r.loss, r.draw


def _batch_outcomes(
    env: TrueSkill,
    history: ReplayMatches,
    batch: Mask,
    tie: Mask,
    winner_first: Mask,
    first_team: Index,
    out: Rated,
    wins: Index,
    losses: Index,
    draws: Index,
) -> None:
    """The batch matches' quality (from the ratings before, all at once, per team shape) and
    their participants' win, loss or draw."""
    start = history.start
    chosen = np.flatnonzero(batch)
    if not len(chosen):
        return
    sizes = np.diff(start)[chosen]
    firsts = first_team[chosen]
    columns = np.arange(int(sizes.max()), dtype=np.int64)
    for a, b in {(int(a), int(b)) for a, b in zip(firsts.tolist(), (sizes - firsts).tolist(), strict=True)}:
        group = chosen[(firsts == a) & (sizes - firsts == b)]
        one = start[group][:, None] + columns[:a]
        two = start[group][:, None] + a + columns[:b]
        out.quality[group] = two_team_quality_batch(
            out.before_mu[one], out.before_sigma[one], out.before_mu[two], out.before_sigma[two], env.beta
        )
    match_of = np.repeat(np.arange(history.matches, dtype=np.int64), np.diff(start))
    mine = batch[match_of]
    drew = tie[match_of] & mine
    won = ~tie[match_of] & mine & ((history.team == 0) == winner_first[match_of])
    draws[drew] = 1
    wins[won] = 1
    losses[mine & ~drew & ~won] = 1


def _count(
    history: ReplayMatches, player: Index, rated: Mask, wins: Index, losses: Index, draws: Index, state: State
) -> None:
    match_of = np.repeat(np.arange(history.matches, dtype=np.int64), np.diff(history.start))
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


def responses(mode: str, k: float, history: ReplayMatches, rated: Rated) -> list[tuple[int, float, str]]:
    """(match pk, quality, stored response) of every rated match, in replay order."""
    names, player, team = history.names, history.player.tolist(), history.team.tolist()
    b_mu, b_sigma = rated.before_mu.tolist(), rated.before_sigma.tolist()
    a_mu, a_sigma = rated.after_mu.tolist(), rated.after_sigma.tolist()
    bounds = history.start.tolist()
    moments: dict[int, str] = {}
    out = []
    for i, (pk, match_id, us, quality, done) in enumerate(
        zip(
            history.pks.tolist(),
            history.match_ids,
            history.played_us.tolist(),
            rated.quality.tolist(),
            rated.rated.tolist(),
            strict=True,
        )
    ):
        if not done:
            continue
        played_at = moments.get(us)
        if played_at is None:
            played_at = moments[us] = instant(us).isoformat().replace("+00:00", "Z")
        players = [
            (names[player[e]], team[e], b_mu[e], b_sigma[e], a_mu[e], a_sigma[e])
            for e in range(bounds[i], bounds[i + 1])
        ]
        out.append((pk, quality, response_json(match_id, mode, played_at, quality, players, k)))
    return out


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
        )
        for name, mu, sigma, matches, wins, losses, draws, last in zip(
            state.names,
            state.mu.tolist(),
            state.sigma.tolist(),
            state.matches.tolist(),
            state.wins.tolist(),
            state.losses.tolist(),
            state.draws.tolist(),
            state.last_us.tolist(),
            strict=True,
        )
        if not is_pseudonym(name)
    ]
