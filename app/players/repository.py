"""SQL for players, their ratings and their match history."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.conservative import conservative_sql, current_tier_sql, drifted_sigma_sql
from app.db.locks import SHARED_LOCK_SQL

# The tier as the current tier settings place it (a re-tier job may not have reached the row).
_RATINGS = text(f"""
    SELECT r.mode, r.mu, r.sigma, m.conservative_k, r.matches, r.wins, r.losses, r.draws, r.last_played_at,
           {current_tier_sql()} AS tier, m.tiers, m.drift_per_day, m.min_matches_for_leaderboard,
           m.display_scale, m.display_offset, now() AS read_at
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.player_id = :player_id
    ORDER BY r.mode
""")

_EXISTS = text("SELECT 1 FROM players WHERE id = :player_id")

# Newest first in the order the ratings were applied (applied_seq, drawn under the row locks
# and restamped by a replay), so each listed `before` is the next older one's `after`. Matches
# imported and not rated yet have none and come last, by key.
_HISTORY = text("""
    SELECT coalesce(m.applied_seq, 0) AS seq, mp.match_pk, m.match_id, m.mode, m.played_at,
           mp.team, mp.rank, mp.weight, m.void,
           mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after, mo.conservative_k
    FROM match_players mp
    JOIN matches m ON m.id = mp.match_pk
    JOIN modes mo ON mo.name = m.mode
    WHERE mp.player_id = :player_id
      AND (CAST(:mode AS varchar) IS NULL OR mp.mode = :mode)
      AND (CAST(:within AS varchar[]) IS NULL OR mp.mode LIKE ANY (CAST(:within AS varchar[])))
      AND (CAST(:before_seq AS bigint) IS NULL
           OR (coalesce(m.applied_seq, 0), mp.match_pk) < (:before_seq, CAST(:before_pk AS bigint)))
    ORDER BY coalesce(m.applied_seq, 0) DESC, mp.match_pk DESC
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
    INSERT INTO ratings (player_id, mode, mu, sigma, conservative, tier_version)
    SELECT CAST(:player_id AS varchar), m.name, CAST(:mu AS float8), CAST(:sigma AS float8),
           {conservative_sql("CAST(:mu AS float8)", "CAST(:sigma AS float8)")}, m.tier_version
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
    before: tuple[int, int] | None,
    limit: int,
    within: list[str] | None = None,
) -> list[Any]:
    """A page of the player's matches, newest applied first, after the (seq, match_pk) `before`,
    of `mode` (None: any) and of the modes `within` matches (LIKE patterns; None: any)."""
    seq, pk = before if before is not None else (None, None)
    params = {
        "player_id": player_id,
        "mode": mode,
        "before_seq": seq,
        "before_pk": pk,
        "limit": limit,
        "within": within,
    }
    return list((await session.execute(_HISTORY, params)).all())


async def set_rating(session: AsyncSession, player_id: str, mode: str, mu: float, sigma: float) -> None:
    await session.execute(_SET, {"player_id": player_id, "mode": mode, "mu": mu, "sigma": sigma})


# Drifted to now over the time since the last match (the mode's drift_per_day).
_CURRENT = text(f"""
    SELECT r.player_id, r.mu, {drifted_sigma_sql("r.sigma", "r.last_played_at", "now()")}
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.mode = :mode AND r.player_id = ANY(CAST(:ids AS varchar[]))
""")


async def current_ratings(
    session: AsyncSession, mode: str, player_ids: list[str]
) -> dict[str, tuple[float, float]]:
    """Current (mu, sigma) of the given players in a mode, sigma drifted over their time away
    (app.rating.drift); players without one are absent."""
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
