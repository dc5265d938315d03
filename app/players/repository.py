"""SQL for players, their ratings and their match history."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.conservative import conservative_sql
from app.db.locks import SHARED_LOCK_SQL

_RATINGS = text("""
    SELECT r.mode, r.mu, r.sigma, m.conservative_k, r.matches, r.wins, r.losses, r.draws, r.last_played_at
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.player_id = :player_id
    ORDER BY r.mode
""")

_EXISTS = text("SELECT 1 FROM players WHERE id = :player_id")

_HISTORY = text("""
    SELECT mp.match_pk, m.match_id, m.mode, m.played_at, mp.team, mp.rank, mp.weight, m.void,
           mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after, mo.conservative_k
    FROM match_players mp
    JOIN matches m ON m.id = mp.match_pk
    JOIN modes mo ON mo.name = m.mode
    WHERE mp.player_id = :player_id
      AND (CAST(:mode AS varchar) IS NULL OR mp.mode = :mode)
      AND (CAST(:before AS bigint) IS NULL OR mp.match_pk < :before)
    ORDER BY mp.match_pk DESC
    LIMIT :limit
""")

# The override is also kept as the player's seed: a replay starts the player there.
_SET = text(f"""
    WITH guard AS (SELECT {SHARED_LOCK_SQL}),
    player AS (INSERT INTO players (id) VALUES (CAST(:player_id AS varchar)) ON CONFLICT DO NOTHING),
    seed AS (
        INSERT INTO rating_seeds (player_id, mode, mu, sigma)
        SELECT CAST(:player_id AS varchar), m.name, CAST(:mu AS float8), CAST(:sigma AS float8)
        FROM modes m WHERE m.name = CAST(:mode AS varchar)
        ON CONFLICT (player_id, mode) DO UPDATE SET mu = excluded.mu, sigma = excluded.sigma, set_at = now()
    )
    INSERT INTO ratings (player_id, mode, mu, sigma, conservative)
    SELECT CAST(:player_id AS varchar), m.name, CAST(:mu AS float8), CAST(:sigma AS float8),
           {conservative_sql("CAST(:mu AS float8)", "CAST(:sigma AS float8)")}
    FROM modes m, guard WHERE m.name = CAST(:mode AS varchar)
    ON CONFLICT (player_id, mode) DO UPDATE
    SET mu = excluded.mu, sigma = excluded.sigma, conservative = excluded.conservative, updated_at = now()
""")


async def exists(session: AsyncSession, player_id: str) -> bool:
    return (await session.execute(_EXISTS, {"player_id": player_id})).first() is not None


async def ratings(session: AsyncSession, player_id: str) -> list[Any]:
    return list((await session.execute(_RATINGS, {"player_id": player_id})).all())


async def history(
    session: AsyncSession,
    player_id: str,
    mode: str | None,
    before: int | None,
    limit: int,
) -> list[Any]:
    params = {"player_id": player_id, "mode": mode, "before": before, "limit": limit}
    return list((await session.execute(_HISTORY, params)).all())


async def set_rating(session: AsyncSession, player_id: str, mode: str, mu: float, sigma: float) -> None:
    await session.execute(_SET, {"player_id": player_id, "mode": mode, "mu": mu, "sigma": sigma})


_CURRENT = text(
    "SELECT player_id, mu, sigma FROM ratings WHERE mode = :mode AND player_id = ANY(CAST(:ids AS varchar[]))"
)


async def current_ratings(
    session: AsyncSession, mode: str, player_ids: list[str]
) -> dict[str, tuple[float, float]]:
    """Current (mu, sigma) of the given players in a mode; players without one are absent."""
    rows = (await session.execute(_CURRENT, {"mode": mode, "ids": player_ids})).all()
    return {row[0]: (row[1], row[2]) for row in rows}


_ONLINE = text("""
    SELECT m.played_at, mp.mu_after, mp.sigma_after
    FROM match_players mp JOIN matches m ON m.id = mp.match_pk
    WHERE mp.player_id = :player_id AND mp.mode = :mode AND NOT m.void
    ORDER BY m.played_at, m.id
""")
_SMOOTHED = text("""
    SELECT days, mu, sigma, job_id FROM learning_curves WHERE mode = :mode AND player_id = :player_id
""")


async def online_curve(session: AsyncSession, player_id: str, mode: str) -> list[Any]:
    """The rating after each of the player's non-void matches, by played_at."""
    return list((await session.execute(_ONLINE, {"player_id": player_id, "mode": mode})).all())


async def smoothed_curve(session: AsyncSession, player_id: str, mode: str) -> Any:
    return (await session.execute(_SMOOTHED, {"player_id": player_id, "mode": mode})).first()
