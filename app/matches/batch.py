"""POST /v1/matches/batch: up to 1,000 matches in one transaction, rated level by level.

A batch is a group (app.matches.service) that arrives whole, so what costs per match in a
single post is paid per batch here:

- the matches are checked and claimed as a group's are (`service.prepare_all`,
  `repository.claim`: one pipeline claims every id and locks every player's rating row in
  one fixed order);
- the new ones are rated in the listed order by app/rating/levels.py, as replay rates a
  history: a match's level is one past its players' previous matches in the batch, and a
  level's two-team matches of unit weights go through the NumPy batch path, the rest through
  `rate_match`. So matches that share players see each other's results in list order, and
  every rating equals rating them one at a time within 1e-12;
- the writes go as columns (`repository.write_columns`) and the responses as plain data,
  serialised once for the rows and once for the answer (`schemas.wire_json`).

Each match still stands alone: it gets what the single post would answer, a match_id
repeated in the batch counts as posted after the earlier one, and a match the engine refuses
undoes the claims so that the batch is claimed again without it (as a group's).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from psycopg import AsyncConnection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app import metrics
from app.errors import AppError
from app.matches import repository
from app.matches.repository import Claim, Claimed, MatchColumns, ParticipantColumns, RatingColumns
from app.matches.schemas import MatchIn, MatchOut, wire_json
from app.matches.service import Prepared, Recorded, Reference, prepare_all, refusal, retry, stored_reference
from app.rating.levels import Matches, Rated, rate_levels

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MICROSECOND = dt.timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Applied:
    """A match this batch rated: its response as plain data (MatchOut's fields in order)."""

    match: dict[str, Any]


# What one item of a batch gets: a match it applied, the stored answer of a retry, or the
# error the single post would raise.
BatchOutcome = Applied | Recorded | AppError


# Batches one process has in its transactions at once. Batches of random players share some
# (two of 1,000 2v2 matches over 100,000 players share about 160), so they wait on each
# other's row locks, and a waiting batch holds the rows it locked before (one fixed order):
# more in flight queue up behind one another, each holding locks the next needs, and stretch
# the span from lock to commit with their own work. One at a time per process keeps one
# batch's locks held only while it writes; the others check and prepare their items meanwhile
# (bench/api_matches.py --batch 1000: docs/benchmarks.md, issue #23).
BATCH_WRITERS = 1


async def record_batch(
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    matches: Sequence[MatchIn | AppError],
    writers: asyncio.Semaphore,
) -> list[BatchOutcome]:
    """Record `matches` in one transaction, in the listed order: each one's outcome. Errors of
    the database propagate (nothing of the batch is then applied); metrics count after commit.
    `writers`: the process's turns to write (BATCH_WRITERS)."""
    prepared = await prepare_all(sessions, matches)
    if not any(isinstance(item, Prepared) for item in prepared):
        return [item for item in prepared if isinstance(item, AppError)]
    async with writers, engine.begin() as connection:
        raw = await connection.get_raw_connection()
        conn: AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
        outcomes, counts = await _apply(conn, prepared)
    for mode, (rated, ratings) in counts.items():
        metrics.MATCHES_RATED.labels(mode).inc(rated)
        metrics.RATINGS_WRITTEN.labels(mode, "match").inc(ratings)
    return outcomes


@dataclass(slots=True)
class _Rating:
    """The batch's new matches (`fresh`: item indices in the listed order) rated as flat
    arrays: entries match by match, team by team, as the items list them."""

    fresh: list[int]
    start: Index  # match i's entries: start[i]:start[i+1]
    keys: list[tuple[str, str]]  # (mode, player id) of each player index
    player: Index  # each entry's player index
    mu: Array  # each player's rating after the batch (before it, for players not in a new match)
    sigma: Array
    # Per entry and per match as `fresh` lists them; `refused` maps a position in `fresh` to
    # the engine's reason.
    result: Rated


async def _apply(
    conn: AsyncConnection[Any], prepared: Sequence[Prepared | AppError]
) -> tuple[list[BatchOutcome], dict[str, tuple[int, int]]]:
    """Claim, rate and write the batch in the caller's transaction: the outcomes, and per mode
    the matches rated and ratings written."""
    excluded: dict[int, AppError] = {}
    while True:
        claims: dict[str, Claim] = {}
        for index, item in enumerate(prepared):
            if isinstance(item, Prepared) and index not in excluded:
                claims.setdefault(item.match.match_id, item.claim())
        claimed = await repository.claim(conn, list(claims.values()))
        rating = _rate(prepared, _fresh(prepared, claimed, excluded), claimed)
        if rating.result.refused:
            # Rare (a tie in a mode without draws): claim again without the refused matches, so
            # that nothing of them is written and a later item with their id is the first post.
            refused = rating.result.refused.items()
            excluded.update({rating.fresh[at]: refusal(reason) for at, reason in refused})
            await repository.rollback_claims(conn)
            continue
        trees = _responses(prepared, rating)
        if rating.fresh:
            try:
                await _write(conn, prepared, rating, claimed, trees)
            except repository.Raced:
                # Another transaction recorded one of the ids since the claim: claimed again,
                # it reads as taken and its items are answered as retries.
                await repository.rollback_claims(conn)
                continue
        break
    counts: dict[str, tuple[int, int]] = {}
    for index, tree in zip(rating.fresh, trees, strict=True):
        mode = prepared[index].match.mode  # type: ignore[union-attr]
        rated, ratings = counts.get(mode, (0, 0))
        counts[mode] = (rated + 1, ratings + len(tree["players"]))
    return _outcomes(prepared, claimed, excluded, rating.fresh, trees), counts


def _fresh(
    prepared: Sequence[Prepared | AppError], claimed: Claimed, excluded: dict[int, AppError]
) -> list[int]:
    """The items this batch applies: the first (not excluded) item of each newly claimed id."""
    seen: set[str] = set()
    fresh = []
    for index, item in enumerate(prepared):
        if isinstance(item, Prepared) and index not in excluded:
            match_id = item.match.match_id
            if match_id in claimed.new and match_id not in seen:
                fresh.append(index)
            seen.add(match_id)
    return fresh


def _rate(prepared: Sequence[Prepared | AppError], fresh: list[int], claimed: Claimed) -> _Rating:
    """Rate the fresh items in order on the locked ratings, mode by mode (modes share no
    rating row), each mode's matches level by level."""
    index: dict[tuple[str, str], int] = {}
    start, player, team, rank, weight, coefficient = [0], [], [], [], [], []
    for item in _items(prepared, fresh):
        mode = item.rules.name
        for t, (members, r) in enumerate(zip(item.match.teams, item.ranks, strict=True)):
            for p in members.players:
                player.append(index.setdefault((mode, p.id), len(index)))
                team.append(t)
                rank.append(r)
                weight.append(p.weight)
                coefficient.append(np.nan if p.coefficient is None else p.coefficient)
        start.append(len(player))
    keys = list(index)
    ratings = [claimed.ratings[key] for key in keys]
    mu = np.array([r[0] for r in ratings], dtype=np.float64)
    sigma = np.array([r[1] for r in ratings], dtype=np.float64)
    starts = np.array(start, dtype=np.int64)
    flat = Matches(
        starts,
        np.array(player, dtype=np.int64),
        np.array(team, dtype=np.int64),
        np.array(rank, dtype=np.float64),
        np.array(weight, dtype=np.float64),
        np.array(coefficient, dtype=np.float64),
    )
    entries = len(player)
    out = _Rating(fresh, starts, keys, flat.player, mu, sigma, Rated.empty(entries, len(fresh)))
    result = out.result
    items = _items(prepared, fresh)
    modes: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        modes.setdefault(item.rules.name, []).append(position)
    for positions in modes.values():
        rules = items[positions[0]].rules
        chosen = np.array(positions, dtype=np.int64)
        sizes = np.diff(starts)[chosen]
        # The chosen matches' entries, in order: the mode's matches as a list of their own.
        shift = np.repeat(starts[chosen] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        at = shift + np.arange(int(sizes.sum()), dtype=np.int64)
        part = Matches(
            np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
            flat.player[at], flat.team[at], flat.rank[at], flat.weight[at], flat.coefficient[at],
        )  # fmt: skip
        done = rate_levels(rules.env, part, mu, sigma)
        result.before_mu[at], result.before_sigma[at] = done.before_mu, done.before_sigma
        result.after_mu[at], result.after_sigma[at] = done.after_mu, done.after_sigma
        result.wins[at], result.losses[at], result.draws[at] = done.wins, done.losses, done.draws
        result.quality[chosen], result.rated[chosen] = done.quality, done.rated
        result.refused.update({positions[i]: reason for i, reason in done.refused.items()})
    return out


def _responses(prepared: Sequence[Prepared | AppError], rating: _Rating) -> list[dict[str, Any]]:
    """Each fresh match's response as plain data, in MatchOut's field order (what
    `service.rated_match_json` writes for a single post)."""
    k = np.array([prepared[at].rules.conservative_k for at in rating.fresh])  # type: ignore[union-attr]
    per_entry = np.repeat(k, np.diff(rating.start))
    b_mu, b_sigma = rating.result.before_mu.tolist(), rating.result.before_sigma.tolist()
    a_mu, a_sigma = rating.result.after_mu.tolist(), rating.result.after_sigma.tolist()
    # app.rating.conservative, mu − k·sigma, elementwise: the same two IEEE operations.
    b_cons = (rating.result.before_mu - per_entry * rating.result.before_sigma).tolist()
    a_cons = (rating.result.after_mu - per_entry * rating.result.after_sigma).tolist()
    bounds = rating.start.tolist()
    trees = []
    for position, (at, quality) in enumerate(zip(rating.fresh, rating.result.quality.tolist(), strict=True)):
        item = prepared[at]
        assert isinstance(item, Prepared)
        match = item.match
        e = bounds[position]
        players = []
        for t, members in enumerate(match.teams):
            for p in members.players:
                players.append(
                    {
                        "player_id": p.id,
                        "team": t,
                        "before": {"mu": b_mu[e], "sigma": b_sigma[e], "conservative": b_cons[e]},
                        "after": {"mu": a_mu[e], "sigma": a_sigma[e], "conservative": a_cons[e]},
                    }
                )
                e += 1
        trees.append(
            {
                "match_id": match.match_id,
                "mode": match.mode,
                "played_at": item.played_at,
                "created": True,
                "quality": quality,
                "void": False,
                "players": players,
            }
        )
    return trees


async def _write(
    conn: AsyncConnection[Any],
    prepared: Sequence[Prepared | AppError],
    rating: _Rating,
    claimed: Claimed,
    trees: list[dict[str, Any]],
) -> None:
    """The fresh matches' rows, their participants and each player's last rating and counters."""
    items = _items(prepared, rating.fresh)
    sizes = np.diff(rating.start)
    played_us = np.array(
        [(item.played_at - EPOCH) // MICROSECOND for item in items],
        dtype=np.int64,
    )
    touched = np.bincount(rating.player, minlength=len(rating.keys))
    latest = np.full(len(rating.keys), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(latest, rating.player, np.repeat(played_us, sizes))
    players = np.flatnonzero(touched)
    counted = len(rating.keys)
    participants = [p for item in items for team in item.match.teams for p in team.players]
    modes = [item.rules.name for item in items]
    pks = [claimed.new[item.match.match_id] for item in items]
    await repository.write_columns(
        conn,
        RatingColumns(
            mode=[rating.keys[p][0] for p in players.tolist()],
            player_id=[rating.keys[p][1] for p in players.tolist()],
            mu=rating.mu[players],
            sigma=rating.sigma[players],
            matches=touched[players].astype(np.int32),
            win=np.bincount(rating.player, rating.result.wins, counted)[players].astype(np.int32),
            loss=np.bincount(rating.player, rating.result.losses, counted)[players].astype(np.int32),
            draw=np.bincount(rating.player, rating.result.draws, counted)[players].astype(np.int32),
            played_us=latest[players],
        ),
        ParticipantColumns(
            match_pk=np.repeat(np.array(pks, dtype=np.int64), sizes),
            player_id=[p.id for p in participants],
            mode=np.repeat(np.array(modes, dtype=object), sizes).tolist(),
            team=np.array(
                [t for item in items for t, team in enumerate(item.match.teams) for _ in team.players],
                dtype=np.int32,
            ),
            rank=np.array(
                [
                    r
                    for item in items
                    for r, team in zip(item.ranks, item.match.teams, strict=True)
                    for _ in team.players
                ],
                dtype=np.float64,
            ),
            weight=np.array([p.weight for p in participants], dtype=np.float64),
            coefficient=np.array(
                [np.nan if p.coefficient is None else p.coefficient for p in participants], dtype=np.float64
            ),
            mu_before=rating.result.before_mu,
            sigma_before=rating.result.before_sigma,
            mu_after=rating.result.after_mu,
            sigma_after=rating.result.after_sigma,
        ),
        MatchColumns(
            pk=np.array(pks, dtype=np.int64),
            match_id=[item.match.match_id for item in items],
            mode=modes,
            played_us=played_us,
            body_hash=[item.fingerprint for item in items],
            quality=rating.result.quality,
            # applied_seq in the listed order: drawn under the locks, in increasing order.
            seq=np.array(claimed.sequence[: len(items)], dtype=np.int64),
            responses=wire_json(trees).decode(),
        ),
    )


def _items(prepared: Sequence[Prepared | AppError], fresh: list[int]) -> list[Prepared]:
    items = [prepared[at] for at in fresh]
    assert all(isinstance(item, Prepared) for item in items)
    return items  # type: ignore[return-value]


def _outcomes(
    prepared: Sequence[Prepared | AppError],
    claimed: Claimed,
    excluded: dict[int, AppError],
    fresh: list[int],
    trees: list[dict[str, Any]],
) -> list[BatchOutcome]:
    """Every item's outcome in the listed order: a fresh match's response, or what a later
    post of its id (or of a stored one) gets."""
    applied = dict(zip(fresh, trees, strict=True))
    by_id = {prepared[at].match.match_id: (at, tree) for at, tree in applied.items()}  # type: ignore[union-attr]
    references: dict[str, Reference] = {}
    outcomes: list[BatchOutcome] = []
    for index, item in enumerate(prepared):
        if isinstance(item, AppError):
            outcomes.append(item)
            continue
        if index in excluded:
            outcomes.append(excluded[index])
            continue
        tree = applied.get(index)
        if tree is not None:
            outcomes.append(Applied(tree))
            continue
        match_id = item.match.match_id
        try:
            reference = references.get(match_id)
            if reference is None:
                reference = references[match_id] = _reference(prepared, claimed, by_id, match_id)
            outcomes.append(retry(reference, item))
        except AppError as exc:
            outcomes.append(exc)
    return outcomes


def _reference(
    prepared: Sequence[Prepared | AppError],
    claimed: Claimed,
    by_id: dict[str, tuple[int, dict[str, Any]]],
    match_id: str,
) -> Reference:
    """What a later post of `match_id` is compared with: the batch's own match, or the stored one."""
    if match_id in by_id:
        at, tree = by_id[match_id]
        first = prepared[at]
        assert isinstance(first, Prepared)
        return Reference(
            first.fingerprint, first.played_at, MatchOut.model_validate({**tree, "created": False})
        )
    return stored_reference(claimed, match_id)
