"""SQL for jobs: the queue of jobs, and reading and rewriting a mode's history in bulk.

Bulk work talks to psycopg directly (COPY, plain tuples): a replay moves hundreds of
thousands of rows, and ORM rows would cost more than the rating itself.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.bulk import driver
from app.db.conservative import conservative_sql
from app.leaderboards import repository as leaderboards

# -- the job queue ----------------------------------------------------------------------

_CREATE = text("""
    INSERT INTO jobs (id, mode, kind, params) VALUES (:id, :mode, :kind, CAST(:params AS jsonb))
""")
_GET = text("""
    SELECT id AS job_id, mode, kind, status, progress, params, result, error, created_at, started_at,
           finished_at
    FROM jobs WHERE id = :id
""")
# A running job whose heartbeat is older than this lost its process.
STALE_AFTER_S = 60
MAX_ATTEMPTS = 3
# SKIP LOCKED: several instances take different jobs, never the same one. A queued job, or
# a running one whose process died, is taken; one that died MAX_ATTEMPTS times fails.
_GIVE_UP = text(f"""
    UPDATE jobs SET status = 'failed', finished_at = now(),
      error = 'the process running it stopped {MAX_ATTEMPTS} times; submit it again'
    WHERE status = 'running' AND attempts >= {MAX_ATTEMPTS}
      AND heartbeat_at < now() - make_interval(secs => {STALE_AFTER_S})
""")
_CLAIM = text(f"""
    UPDATE jobs SET status = 'running', started_at = now(), heartbeat_at = now(),
      attempts = attempts + 1, progress = 0
    WHERE id = (
        SELECT id FROM jobs
        WHERE status = 'queued'
           OR (status = 'running' AND heartbeat_at < now() - make_interval(secs => {STALE_AFTER_S}))
        ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
    )
    RETURNING id, mode, kind, params
""")
_REQUEUE = text("UPDATE jobs SET status = 'queued', progress = 0 WHERE id = :id AND status = 'running'")
_HEARTBEAT = text("UPDATE jobs SET heartbeat_at = now() WHERE id = :id AND status = 'running'")
_PROGRESS = text("UPDATE jobs SET progress = :progress WHERE id = :id")
_DONE = text("""
    UPDATE jobs SET status = 'done', progress = 1, result = CAST(:result AS jsonb), finished_at = now()
    WHERE id = :id
""")
_FAILED = text("UPDATE jobs SET status = 'failed', error = :error, finished_at = now() WHERE id = :id")


async def create(session: AsyncSession, job_id: str, mode: str, kind: str, params: dict[str, Any]) -> None:
    await session.execute(_CREATE, {"id": job_id, "mode": mode, "kind": kind, "params": json.dumps(params)})


async def get(session: AsyncSession, job_id: str) -> Any:
    return (await session.execute(_GET, {"id": job_id})).first()


async def claim(session: AsyncSession) -> Any:
    await session.execute(_GIVE_UP)
    return (await session.execute(_CLAIM)).first()


async def requeue(session: AsyncSession, job_id: str) -> None:
    await session.execute(_REQUEUE, {"id": job_id})


async def heartbeat(session: AsyncSession, job_id: str) -> None:
    await session.execute(_HEARTBEAT, {"id": job_id})


async def progress(session: AsyncSession, job_id: str, value: float) -> None:
    await session.execute(_PROGRESS, {"id": job_id, "progress": value})


async def done(session: AsyncSession, job_id: str, result: dict[str, Any]) -> None:
    await session.execute(_DONE, {"id": job_id, "result": json.dumps(result)})


async def failed(session: AsyncSession, job_id: str, error: str) -> None:
    await session.execute(_FAILED, {"id": job_id, "error": error})


# -- a mode's history -------------------------------------------------------------------


@dataclass(slots=True)
class Played:
    """One non-void match as the replay and the smoother need it."""

    pk: int
    match_id: str
    played_at: dt.datetime
    teams: list[list[str]]
    ranks: list[float]
    weights: list[list[float]]
    coefficients: list[list[float | None]]


_MATCHES = """
    SELECT m.id, m.match_id, m.played_at, mp.team, mp.player_id, mp.rank, mp.weight, mp.coefficient
    FROM matches m JOIN match_players mp ON mp.match_pk = m.id
    WHERE m.mode = %(mode)s AND NOT m.void {only}
    ORDER BY m.played_at, m.id, mp.team, mp.player_id
"""


def _group(rows: Iterable[tuple[Any, ...]]) -> list[Played]:
    out: list[Played] = []
    for pk, match_id, played_at, team, player, rank, weight, coefficient in rows:
        if not out or out[-1].pk != pk:
            out.append(Played(pk, match_id, played_at, [], [], [], []))
        match = out[-1]
        if team == len(match.teams):
            match.teams.append([])
            match.ranks.append(rank)
            match.weights.append([])
            match.coefficients.append([])
        match.teams[team].append(player)
        match.weights[team].append(weight)
        match.coefficients[team].append(coefficient)
    return out


async def matches(session: AsyncSession, mode: str, only: Sequence[int] | None = None) -> list[Played]:
    """The mode's non-void matches in played_at order (then recording order), or just `only`."""
    conn = await driver(session)
    params: dict[str, Any] = {"mode": mode}
    clause = ""
    if only is not None:
        clause, params["only"] = "AND m.id = ANY(%(only)s)", list(only)
    async with conn.cursor() as cursor:
        await cursor.execute(_MATCHES.format(only=clause), params)
        return _group(await cursor.fetchall())


async def live_match_pks(session: AsyncSession, mode: str) -> list[int]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT id FROM matches WHERE mode = %s AND NOT void ORDER BY applied_seq, id", (mode,)
        )
        return [row[0] for row in await cursor.fetchall()]


async def seeds(session: AsyncSession, mode: str) -> dict[str, tuple[float, float]]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT player_id, mu, sigma FROM rating_seeds WHERE mode = %s", (mode,))
        return {row[0]: (row[1], row[2]) for row in await cursor.fetchall()}


async def rated_players(session: AsyncSession, mode: str) -> list[str]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT player_id FROM ratings WHERE mode = %s", (mode,))
        return [row[0] for row in await cursor.fetchall()]


@dataclass(slots=True)
class NewRating:
    player_id: str
    mu: float
    sigma: float
    matches: int
    wins: int
    losses: int
    draws: int
    last_played_at: dt.datetime | None


@dataclass(slots=True)
class NewParticipant:
    match_pk: int
    player_id: str
    mu_before: float
    sigma_before: float
    mu_after: float
    sigma_after: float


async def _staging(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute("""
        CREATE TEMP TABLE IF NOT EXISTS replay_ratings (
            player_id varchar(128) PRIMARY KEY, mu float8, sigma float8, matches int, wins int,
            losses int, draws int, last_played_at timestamptz) ON COMMIT DROP
    """)
    await conn.execute("""
        CREATE TEMP TABLE IF NOT EXISTS replay_participants (
            match_pk bigint, player_id varchar(128), mu_before float8, sigma_before float8,
            mu_after float8, sigma_after float8) ON COMMIT DROP
    """)
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS replay_matches (id bigint, quality float8, response jsonb)"
        " ON COMMIT DROP"
    )


async def stage_matches(
    session: AsyncSession, participants: Iterable[NewParticipant], responses: Iterable[tuple[int, float, str]]
) -> None:
    """COPY re-rated participants and responses into temporary tables of this transaction."""
    conn = await driver(session)
    await _staging(conn)
    async with conn.cursor() as cursor:
        async with cursor.copy(
            "COPY replay_participants (match_pk, player_id, mu_before, sigma_before, mu_after, sigma_after)"
            " FROM STDIN"
        ) as copy:
            for p in participants:
                await copy.write_row(
                    (p.match_pk, p.player_id, p.mu_before, p.sigma_before, p.mu_after, p.sigma_after)
                )
        async with cursor.copy("COPY replay_matches (id, quality, response) FROM STDIN") as copy:
            for row in responses:
                await copy.write_row(row)


async def stage_ratings(session: AsyncSession, ratings: Iterable[NewRating]) -> None:
    """COPY the final ratings into a temporary table of this transaction."""
    conn = await driver(session)
    await _staging(conn)
    async with (
        conn.cursor() as cursor,
        cursor.copy(
            "COPY replay_ratings (player_id, mu, sigma, matches, wins, losses, draws, last_played_at)"
            " FROM STDIN"
        ) as copy,
    ):
        for r in ratings:
            await copy.write_row(
                (r.player_id, r.mu, r.sigma, r.matches, r.wins, r.losses, r.draws, r.last_played_at)
            )


async def swap_replay(session: AsyncSession, mode: str) -> None:
    """Swap the staged rows in; the caller holds the mode's exclusive lock."""
    conn = await driver(session)
    await leaderboards.bulk(session, True)
    await conn.execute(
        f"""
        INSERT INTO ratings AS r (player_id, mode, mu, sigma, conservative, matches, wins, losses, draws,
                                  last_played_at)
        SELECT s.player_id, m.name, s.mu, s.sigma, {conservative_sql("s.mu", "s.sigma")}, s.matches, s.wins,
               s.losses, s.draws, s.last_played_at
        FROM replay_ratings s, modes m WHERE m.name = %(mode)s
        ON CONFLICT (player_id, mode) DO UPDATE
        SET mu = excluded.mu, sigma = excluded.sigma, conservative = excluded.conservative,
            matches = excluded.matches, wins = excluded.wins, losses = excluded.losses,
            draws = excluded.draws, last_played_at = excluded.last_played_at, updated_at = now()
        """,
        {"mode": mode},
    )
    await conn.execute("""
        UPDATE match_players mp
        SET mu_before = s.mu_before, sigma_before = s.sigma_before, mu_after = s.mu_after,
            sigma_after = s.sigma_after
        FROM replay_participants s WHERE mp.match_pk = s.match_pk AND mp.player_id = s.player_id
    """)
    await conn.execute("""
        UPDATE matches m SET quality = s.quality, response = s.response
        FROM replay_matches s WHERE m.id = s.id
    """)
    await leaderboards.recount(session, mode)


async def replace_curves(
    session: AsyncSession,
    mode: str,
    job_id: str,
    curves: Iterable[tuple[str, list[float], list[float], list[float]]],
) -> None:
    """Swap the mode's learning curves for these, in this transaction."""
    conn = await driver(session)
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS new_curves (player_id varchar(128), days float8[], mu float8[],"
        " sigma float8[]) ON COMMIT DROP"
    )
    async with (
        conn.cursor() as cursor,
        cursor.copy("COPY new_curves (player_id, days, mu, sigma) FROM STDIN") as copy,
    ):
        for row in curves:
            await copy.write_row(row)
    await conn.execute("DELETE FROM learning_curves WHERE mode = %s", (mode,))
    await conn.execute(
        "INSERT INTO learning_curves (mode, player_id, job_id, days, mu, sigma)"
        " SELECT %s, player_id, %s, days, mu, sigma FROM new_curves",
        (mode, job_id),
    )
