"""SQL for recording matches: claim the id, create and lock ratings, write everything.

A match costs three statements: claim the match id (creating missing players and
ratings), lock the participants' ratings in player-id order, and one statement that
updates the ratings, inserts the participants and completes the match row.

They run on the session's own psycopg connection, in the transaction the session commits:
the claim and the lock go out in one pipeline, so a match costs four round trips (BEGIN with
the transaction's statement timeout, app/db/engine.py; the claim and the lock; the write;
COMMIT) rather than six, and none of SQLAlchemy's per-statement work, on the service's
busiest path.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.conservative import conservative_sql
from app.db.locks import shared_lock

# Claims the match id and, only when it was free, creates the missing players and
# ratings at the prior. Sorted ids: concurrent inserts of new players wait in one order.
# The shared lock keeps whole-mode rewrites (app.leaderboards) out until commit, and
# `conservative` always takes k from the modes row, never from a cache.
_CLAIM = f"""
    WITH guard AS (SELECT {shared_lock("%(mode)s")}), claimed AS (
        INSERT INTO matches (match_id, mode, played_at, body_hash, quality, response)
        SELECT %(match_id)s, %(mode)s, %(played_at)s, %(body_hash)s, 0, '{{}}'::jsonb FROM guard
        ON CONFLICT (match_id) DO NOTHING
        RETURNING id
    ), new_players AS (
        INSERT INTO players (id)
        SELECT unnest(CAST(%(ids)s AS varchar[])) WHERE EXISTS (SELECT 1 FROM claimed)
        ON CONFLICT DO NOTHING
    ), new_ratings AS (
        INSERT INTO ratings (player_id, mode, mu, sigma, conservative)
        SELECT unnest(CAST(%(ids)s AS varchar[])), m.name, %(mu)s, %(sigma)s,
               {conservative_sql("%(mu)s", "%(sigma)s")}
        FROM modes m WHERE m.name = %(mode)s AND EXISTS (SELECT 1 FROM claimed)
        ON CONFLICT DO NOTHING
    )
    SELECT id FROM claimed
"""

# One fixed lock order (player id) for every transaction: no deadlocks (DESIGN.md). A
# statement of its own, after the claim: in one statement the order of the two would not be
# fixed. When the id was taken the rows are locked for nothing until the (short) answer.
_LOCK = """
    SELECT player_id, mu, sigma FROM ratings
    WHERE mode = %(mode)s AND player_id = ANY(CAST(%(ids)s AS varchar[]))
    ORDER BY player_id
    FOR UPDATE
"""

_STORED = text("SELECT body_hash, played_at, response, void FROM matches WHERE match_id = :match_id")

# The participants arrive as one JSON array (one parameter, expanded by PostgreSQL) rather
# than fourteen arrays, each of which psycopg would convert element by element in Python.
_APPLY = f"""
    WITH v AS (
        SELECT * FROM jsonb_to_recordset(CAST(%(players)s AS jsonb)) AS v(
            player_id varchar, team int, rank float8, weight float8, coefficient float8,
            mu_before float8, sigma_before float8, mu float8, sigma float8, win int, loss int, draw int)
    ), changed AS (
        UPDATE ratings AS r
        SET mu = v.mu, sigma = v.sigma, conservative = {conservative_sql("v.mu", "v.sigma")},
            matches = r.matches + 1, wins = r.wins + v.win, losses = r.losses + v.loss,
            draws = r.draws + v.draw,
            last_played_at = GREATEST(r.last_played_at, CAST(%(played_at)s AS timestamptz)),
            updated_at = now()
        FROM v, modes AS m
        WHERE r.mode = %(mode)s AND r.player_id = v.player_id AND m.name = %(mode)s
    ), participants AS (
        INSERT INTO match_players
            (match_pk, player_id, mode, team, rank, weight, coefficient,
             mu_before, sigma_before, mu_after, sigma_after)
        SELECT %(match_pk)s, player_id, %(mode)s, team, rank, weight, coefficient,
               mu_before, sigma_before, mu, sigma
        FROM v
    )
    UPDATE matches
    SET quality = %(quality)s, response = CAST(%(response)s AS jsonb),
        applied_seq = nextval('match_applied_seq')
    WHERE id = %(match_pk)s
"""


@dataclass(frozen=True, slots=True)
class StoredMatch:
    body_hash: str
    played_at: dt.datetime
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


async def _driver(session: AsyncSession) -> AsyncConnection[Any]:
    """The psycopg connection under the session, in the session's transaction."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    driver: AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
    return driver


async def claim(
    session: AsyncSession,
    match_id: str,
    mode: str,
    played_at: dt.datetime,
    body_hash: str,
    player_ids: list[str],
    prior: Prior,
) -> tuple[int, dict[str, tuple[float, float]]] | None:
    """Claim the match id and lock its players' ratings: the new match row's key and
    id -> (mu, sigma), or None when the id is taken (after the taker commits).

    When the id is new, missing players and their ratings are created at the prior.
    """
    ids = sorted(player_ids)
    params = {
        "match_id": match_id,
        "mode": mode,
        "played_at": played_at,
        "body_hash": body_hash,
        "ids": ids,
        "mu": prior.mu,
        "sigma": prior.sigma,
    }
    driver = await _driver(session)
    async with driver.pipeline():
        claimed = await driver.execute(_CLAIM, params)
        locked = await driver.execute(_LOCK, {"mode": mode, "ids": ids})
    row = await claimed.fetchone()
    if row is None:
        return None
    return int(row[0]), {player: (mu, sigma) for player, mu, sigma in await locked.fetchall()}


async def stored(session: AsyncSession, match_id: str) -> StoredMatch | None:
    row = (await session.execute(_STORED, {"match_id": match_id})).first()
    return None if row is None else StoredMatch(row[0], row[1], row[2], row[3])


async def apply(
    session: AsyncSession,
    match_pk: int,
    mode: str,
    played_at: dt.datetime,
    outcomes: list[Outcome],
    quality: float,
    response_json: str,
) -> None:
    driver = await _driver(session)
    players = [
        {
            "player_id": o.player_id,
            "team": o.team,
            "rank": o.rank,
            "weight": o.weight,
            "coefficient": o.coefficient,
            "mu_before": o.mu_before,
            "sigma_before": o.sigma_before,
            "mu": o.mu,
            "sigma": o.sigma,
            "win": o.win,
            "loss": o.loss,
            "draw": o.draw,
        }
        for o in outcomes
    ]
    await driver.execute(
        _APPLY,
        {
            "match_pk": match_pk,
            "mode": mode,
            "played_at": played_at,
            "quality": quality,
            "response": response_json,
            "players": json.dumps(players),
        },
    )


_VOID = text("UPDATE matches SET void = true WHERE match_id = :match_id RETURNING response")


async def void(session: AsyncSession, match_id: str) -> dict[str, Any] | None:
    row = (await session.execute(_VOID, {"match_id": match_id})).first()
    return None if row is None else dict(row[0])
