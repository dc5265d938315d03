"""SQL for recording matches: claim the id, create and lock ratings, write everything.

A match costs three statements: claim the match id (creating missing players and
ratings), lock the participants' ratings in player-id order, and one statement that
updates the ratings, inserts the participants and completes the match row.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.leaderboards.repository import SHARED_LOCK_SQL

# Claims the match id and, only when it was free, creates the missing players and
# ratings at the prior. Sorted ids: concurrent inserts of new players wait in one order.
# The shared lock keeps whole-mode rewrites (app.leaderboards) out until commit, and
# `conservative` always takes k from the modes row, never from a cache.
_CLAIM = text(f"""
    WITH guard AS (SELECT {SHARED_LOCK_SQL}), claimed AS (
        INSERT INTO matches (match_id, mode, played_at, body_hash, quality, response)
        SELECT :match_id, :mode, :played_at, :body_hash, 0, '{{}}'::jsonb FROM guard
        ON CONFLICT (match_id) DO NOTHING
        RETURNING id
    ), new_players AS (
        INSERT INTO players (id)
        SELECT unnest(CAST(:ids AS varchar[])) WHERE EXISTS (SELECT 1 FROM claimed)
        ON CONFLICT DO NOTHING
    ), new_ratings AS (
        INSERT INTO ratings (player_id, mode, mu, sigma, conservative)
        SELECT unnest(CAST(:ids AS varchar[])), m.name, :mu, :sigma, :mu - m.conservative_k * :sigma
        FROM modes m WHERE m.name = :mode AND EXISTS (SELECT 1 FROM claimed)
        ON CONFLICT DO NOTHING
    )
    SELECT id FROM claimed
""")

_STORED = text("SELECT body_hash, response, void FROM matches WHERE match_id = :match_id")

# One fixed lock order (player id) for every transaction: no deadlocks (DESIGN.md).
_LOCK = text("""
    SELECT player_id, mu, sigma FROM ratings
    WHERE mode = :mode AND player_id = ANY(CAST(:ids AS varchar[]))
    ORDER BY player_id
    FOR UPDATE
""")

_APPLY = text("""
    WITH changed AS (
        UPDATE ratings AS r
        SET mu = v.mu, sigma = v.sigma, conservative = v.mu - m.conservative_k * v.sigma,
            matches = r.matches + 1, wins = r.wins + v.win, losses = r.losses + v.loss,
            draws = r.draws + v.draw,
            last_played_at = GREATEST(r.last_played_at, CAST(:played_at AS timestamptz)),
            updated_at = now()
        FROM (
            SELECT unnest(CAST(:ids AS varchar[])) AS player_id, unnest(CAST(:mus AS float8[])) AS mu,
                   unnest(CAST(:sigmas AS float8[])) AS sigma,
                   unnest(CAST(:wins AS int[])) AS win, unnest(CAST(:losses AS int[])) AS loss,
                   unnest(CAST(:draws AS int[])) AS draw
        ) AS v, modes AS m
        WHERE r.mode = :mode AND r.player_id = v.player_id AND m.name = :mode
    ), participants AS (
        INSERT INTO match_players
            (match_pk, player_id, mode, team, rank, weight, coefficient,
             mu_before, sigma_before, mu_after, sigma_after)
        SELECT :match_pk, unnest(CAST(:ids AS varchar[])), :mode, unnest(CAST(:teams AS int[])),
               unnest(CAST(:ranks AS float8[])), unnest(CAST(:weights AS float8[])),
               unnest(CAST(:coefficients AS float8[])),
               unnest(CAST(:mus_before AS float8[])), unnest(CAST(:sigmas_before AS float8[])),
               unnest(CAST(:mus AS float8[])), unnest(CAST(:sigmas AS float8[]))
    )
    UPDATE matches
    SET quality = :quality, response = CAST(:response AS jsonb), applied_seq = nextval('match_applied_seq')
    WHERE id = :match_pk
""")


@dataclass(frozen=True, slots=True)
class StoredMatch:
    body_hash: str
    response: dict[str, Any]
    void: bool


@dataclass(slots=True)
class Outcome:
    """One participant's new rating and counter increments."""

    player_id: str
    team: int
    rank: float
    weight: float
    coefficient: float | None
    mu_before: float
    sigma_before: float
    mu: float
    sigma: float
    win: int
    loss: int
    draw: int


@dataclass(frozen=True, slots=True)
class Prior:
    """A mode's starting rating."""

    mu: float
    sigma: float


async def claim(
    session: AsyncSession,
    match_id: str,
    mode: str,
    played_at: dt.datetime,
    body_hash: str,
    player_ids: list[str],
    prior: Prior,
) -> int | None:
    """The new match row's key, or None when the id is taken (after the taker commits).

    When the id is new, missing players and their ratings are created at the prior.
    """
    params = {
        "match_id": match_id,
        "mode": mode,
        "played_at": played_at,
        "body_hash": body_hash,
        "ids": sorted(player_ids),
        "mu": prior.mu,
        "sigma": prior.sigma,
    }
    row = (await session.execute(_CLAIM, params)).first()
    return None if row is None else int(row[0])


async def stored(session: AsyncSession, match_id: str) -> StoredMatch | None:
    row = (await session.execute(_STORED, {"match_id": match_id})).first()
    return None if row is None else StoredMatch(row[0], row[1], row[2])


async def lock_ratings(
    session: AsyncSession, mode: str, player_ids: list[str]
) -> dict[str, tuple[float, float]]:
    """Lock the participants' ratings in player-id order; id -> (mu, sigma)."""
    rows = (await session.execute(_LOCK, {"mode": mode, "ids": sorted(player_ids)})).all()
    return {row[0]: (row[1], row[2]) for row in rows}


async def apply(
    session: AsyncSession,
    match_pk: int,
    mode: str,
    played_at: dt.datetime,
    outcomes: list[Outcome],
    quality: float,
    response_json: str,
) -> None:
    await session.execute(
        _APPLY,
        {
            "match_pk": match_pk,
            "mode": mode,
            "played_at": played_at,
            "quality": quality,
            "response": response_json,
            "ids": [o.player_id for o in outcomes],
            "mus": [o.mu for o in outcomes],
            "sigmas": [o.sigma for o in outcomes],
            "wins": [o.win for o in outcomes],
            "losses": [o.loss for o in outcomes],
            "draws": [o.draw for o in outcomes],
            "teams": [o.team for o in outcomes],
            "ranks": [o.rank for o in outcomes],
            "weights": [o.weight for o in outcomes],
            "coefficients": [o.coefficient for o in outcomes],
            "mus_before": [o.mu_before for o in outcomes],
            "sigmas_before": [o.sigma_before for o in outcomes],
        },
    )


_VOID = text("UPDATE matches SET void = true WHERE match_id = :match_id RETURNING response")


async def void(session: AsyncSession, match_id: str) -> dict[str, Any] | None:
    row = (await session.execute(_VOID, {"match_id": match_id})).first()
    return None if row is None else dict(row[0])
