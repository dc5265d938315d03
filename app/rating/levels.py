"""Many matches in their order of application, rated level by level (replay and every recorded match).

One at a time, rating N matches is N engine calls. Here the matches are cut into **levels**
instead, as the history engine cuts its passes (app/rating/history/schedule.py): a match's
level is one past the levels of its players' previous matches in the list. A level's matches
share no player and see only lower levels, so rating level after level, all of a level's
matches at once, gives what one at a time gives (within 1e-12: the batch path's closed form
rounds differently from the factor graph). A level's two-team matches of unit weights go
through the NumPy batch path (app/rating/batch.py) in one call per team shape, when the
mode's model is one it covers (`TrueSkill.batch_covers`); every other match (three or more
teams, partial play, a tie the mode cannot rate, another tie model or team function) goes
through `rate_match`, the one "rate one match", on its own; so do all of a list of a few
matches (`ONE_AT_A_TIME`).

The matches are flat arrays (`Matches`): one row per match, one per participant, players by
index into the caller's rating arrays; nothing holds a Python object per match.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.rating.batch import two_team_quality_batch
from app.rating.drift import drift_columns
from app.rating.environment import TrueSkill
from app.rating.errors import RatingInputError
from app.rating.history.schedule import chain_levels
from app.rating.match import MatchTeams, rate_match
from app.rating.rating import Rating

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


# Up to this many matches are rated one at a time through `rate_match`, in order: the levels'
# set-up costs a few dozen NumPy calls whatever the number of matches, more than the batch
# path saves on so few (a group of single posts is often one match).
ONE_AT_A_TIME = 3


@dataclass(frozen=True, slots=True)
class Matches:
    """Matches in the order they are applied. Match i's participants are the entries
    start[i]:start[i+1], team by team (teams numbered 0, 1, … in the match's order); `player`
    indexes the rating arrays; a coefficient not given is NaN (1 in a weighted mode)."""

    start: Index
    player: Index
    team: Index
    rank: Array
    weight: Array
    coefficient: Array

    @property
    def count(self) -> int:
        return len(self.start) - 1


@dataclass(frozen=True, slots=True)
class Drift:
    """Skill drift between a player's matches (app.rating.drift, seed 001 eq. 4): gamma per
    day, each match's instant (`played_us`, microseconds since 1970) and each player's last
    played instant (`last_us`, by player index, updated in place; NEVER for none). Before a
    match, its players' sigma is drifted from their last match to it; `before` is that
    drifted rating, then tau is added as always."""

    gamma: float
    played_us: Index
    last_us: Index

    def apply(self, matches: Matches, chosen: Index, sigma: Array) -> tuple[Index, Array, Index]:
        """Drift the players of the `chosen` matches (no two share a player) to their match:
        the players, and their sigma and last instant before, for `undo`."""
        sizes = matches.start[chosen + 1] - matches.start[chosen]
        shift = np.repeat(matches.start[chosen] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        entries = shift + np.arange(int(sizes.sum()), dtype=np.int64)
        players = matches.player[entries]
        at = np.repeat(self.played_us[chosen], sizes)
        saved = (players, sigma[players], self.last_us[players])
        sigma[players] = drift_columns(sigma[players], self.last_us[players], at, self.gamma)
        self.last_us[players] = np.maximum(self.last_us[players], at)
        return saved

    def undo(self, matches: Matches, i: int, saved: tuple[Index, Array, Index], sigma: Array) -> None:
        """Give match i's players back their sigma and last instant from before `apply`: a
        match the engine refused is not applied, its time away included."""
        players, old_sigma, old_last = saved
        mine = np.isin(players, matches.player[matches.start[i] : matches.start[i + 1]])
        sigma[players[mine]] = old_sigma[mine]
        self.last_us[players[mine]] = old_last[mine]


@dataclass(slots=True)
class Rated:
    """Per entry the rating before and after and the player's win, loss or draw; per match
    the quality and whether it was rated. A match the engine refuses is not applied: its
    reason is in `refused` and later matches see its players as they were."""

    before_mu: Array
    before_sigma: Array
    after_mu: Array
    after_sigma: Array
    wins: Index
    losses: Index
    draws: Index
    quality: Array
    rated: Mask
    refused: dict[int, str]

    @classmethod
    def empty(cls, entries: int, matches: int) -> Rated:
        """Zeros for `entries` participants of `matches` matches, every match rated."""
        return cls(
            np.zeros(entries), np.zeros(entries), np.zeros(entries), np.zeros(entries),
            np.zeros(entries, dtype=np.int64), np.zeros(entries, dtype=np.int64),
            np.zeros(entries, dtype=np.int64), np.zeros(matches), np.ones(matches, dtype=bool), {},
        )  # fmt: skip


def rate_levels(
    env: TrueSkill,
    matches: Matches,
    mu: Array,
    sigma: Array,
    progress: Callable[[float], None] = lambda _: None,
    drift: Drift | None = None,
) -> Rated:
    """Rate `matches` in order on the ratings `mu`, `sigma` (one per player index, updated in
    place to every player's rating after the last of their matches), level by level; with
    `drift`, each player's sigma drifts over the time since their previous match first."""
    n, entries = matches.count, len(matches.player)
    out = Rated.empty(entries, n)
    if n <= ONE_AT_A_TIME:
        for i in range(n):
            saved = None if drift is None else drift.apply(matches, np.array([i], dtype=np.int64), sigma)
            _rate_one(env, matches, i, out, mu, sigma)
            if saved is not None and drift is not None and i in out.refused:
                drift.undo(matches, i, saved, sigma)
        progress(1.0)
        return out
    start, team, weight, player = matches.start, matches.team, matches.weight, matches.player
    first = start[:-1]
    size = np.diff(start)
    teams = np.maximum.reduceat(team, first) + 1
    first_team = np.add.reduceat((team == 0).astype(np.int64), first)
    second_first = np.minimum(first + first_team, start[1:] - 1)
    first_rank, second_rank = matches.rank[first], matches.rank[second_first]
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
    level, _ = chain_levels(start, player, np.full(len(mu), -1, dtype=np.int64), len(mu), [(0, n)])
    order = np.lexsort((shape, level))
    key = level[order] * ((widest + 1) ** 2 + 1) + shape[order]
    runs = np.flatnonzero(np.diff(key)) + 1
    bounds = [0, *runs.tolist(), n]
    columns = np.arange(widest, dtype=np.int64)
    every = max(1, (len(bounds) - 1) // 100)
    for run, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if run % every == 0:
            progress(lo / n)
        chosen = order[lo:hi]
        saved = None if drift is None else drift.apply(matches, chosen, sigma)
        if shape[chosen[0]] == 0:
            for i in chosen.tolist():
                _rate_one(env, matches, i, out, mu, sigma)
                if saved is not None and drift is not None and i in out.refused:
                    drift.undo(matches, i, saved, sigma)
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
    _batch_outcomes(env, matches, batch, tie, winner_first, first_team, out)
    progress(1.0)
    return out


def _rate_one(env: TrueSkill, matches: Matches, i: int, out: Rated, mu: Array, sigma: Array) -> None:
    """One match through `rate_match`, as a single post rates it."""
    lo, hi = int(matches.start[i]), int(matches.start[i + 1])
    # Read as lists once: a NumPy scalar read one at a time costs more than the rating of a 1v1.
    entries = slice(lo, hi)
    players = matches.player[entries].tolist()
    ids: list[list[str]] = []
    ratings: list[list[Rating]] = []
    weights: list[list[float]] = []
    coefficients: list[list[float]] = []
    ranks: list[float] = []
    for t, p, r, w, c, m, s in zip(
        matches.team[entries].tolist(),
        players,
        matches.rank[entries].tolist(),
        matches.weight[entries].tolist(),
        matches.coefficient[entries].tolist(),
        mu[players].tolist(),
        sigma[players].tolist(),
        strict=True,
    ):
        if t == len(ids):
            ids.append([])
            ratings.append([])
            weights.append([])
            coefficients.append([])
            ranks.append(r)
        ids[t].append(str(p))
        ratings[t].append(Rating(m, s))
        weights[t].append(w)
        coefficients[t].append(1.0 if c != c else c)  # NaN: not given, 1 in a weighted mode
    teams = MatchTeams(
        ids, ratings, ranks, weights, coefficients if env.team_performance == "weighted" else None
    )
    try:
        rated = rate_match(env, teams)
    except RatingInputError as exc:
        out.rated[i] = False
        out.refused[i] = str(exc)
        return
    out.quality[i] = rated.quality
    results = rated.players
    out.before_mu[entries] = [r.before.mu for r in results]
    out.before_sigma[entries] = [r.before.sigma for r in results]
    out.after_mu[entries] = mu[players] = [r.after.mu for r in results]
    out.after_sigma[entries] = sigma[players] = [r.after.sigma for r in results]
    out.wins[entries] = [r.win for r in results]
    out.losses[entries] = [r.loss for r in results]
    out.draws[entries] = [r.draw for r in results]


def _batch_outcomes(
    env: TrueSkill,
    matches: Matches,
    batch: Mask,
    tie: Mask,
    winner_first: Mask,
    first_team: Index,
    out: Rated,
) -> None:
    """The batch matches' quality (from the ratings before, all at once, per team shape) and
    their participants' win, loss or draw."""
    start = matches.start
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
    match_of = np.repeat(np.arange(matches.count, dtype=np.int64), np.diff(start))
    mine = batch[match_of]
    drew = tie[match_of] & mine
    won = ~tie[match_of] & mine & ((matches.team == 0) == winner_first[match_of])
    out.draws[drew] = 1
    out.wins[won] = 1
    out.losses[mine & ~drew & ~won] = 1
