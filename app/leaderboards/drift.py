"""The daily re-rank of a mode with drift: its leaderboards move forward to the present.

A leaderboard orders by the stored `conservative` column, which in a mode with drift is the
estimate drifted from each player's last match to the mode's `drift_as_of` (app.db.conservative,
migration 0015). The order by a drifted estimate changes with time alone, which no index
follows, so the column is moved forward in steps: when `drift_as_of` is older than RERANK_AFTER,
one instance claims the mode (the UPDATE of its modes row: the others see the new instant)
and rewrites the column in chunks of players, in player id order, each a transaction of its
own that takes the rows' locks in the order match posts take them (no deadlock), with the
mode's lock shared as a post holds it. The leaderboard counts follow in each chunk's
transaction (the trigger of migration 0003), so ranks stay exact throughout; a chunk not yet
rewritten is at most RERANK_AFTER plus the re-rank's own time behind: within a day's drift.

Tiers do not move here: a player's tier moves at their next match (docs/api.md).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.conservative import conservative_sql
from app.db.locks import SHARED_LOCK_SQL

RERANK_AFTER = dt.timedelta(hours=12)
CHUNK = 10_000

_DUE = text("""
    UPDATE modes SET drift_as_of = now()
    WHERE drift_per_day > 0 AND (drift_as_of IS NULL OR drift_as_of < now() - CAST(:after AS interval))
    RETURNING name
""")

_GUARD = text(f"SELECT {SHARED_LOCK_SQL}")

_CHUNK = text(f"""
    WITH chunk AS (
        SELECT player_id FROM ratings
        WHERE mode = :mode AND player_id > :after
        ORDER BY player_id
        LIMIT :limit
        FOR UPDATE
    ), moved AS (
        UPDATE ratings r SET conservative = {conservative_sql("r.mu", "r.sigma", last="r.last_played_at")}
        FROM chunk, modes m
        WHERE m.name = :mode AND r.mode = :mode AND r.player_id = chunk.player_id
          AND r.conservative IS DISTINCT FROM {conservative_sql("r.mu", "r.sigma", last="r.last_played_at")}
    )
    SELECT max(player_id), count(*) FROM chunk
""")


async def due(sessions: async_sessionmaker[AsyncSession], after: dt.timedelta = RERANK_AFTER) -> list[str]:
    """Claim the modes whose leaderboards are older than `after`: their drift_as_of is now."""
    async with sessions() as session, session.begin():
        return [row[0] for row in (await session.execute(_DUE, {"after": after})).all()]


async def rerank(sessions: async_sessionmaker[AsyncSession], mode: str, chunk: int = CHUNK) -> int:
    """Rewrite the mode's `conservative` column to its drift_as_of, chunk by chunk: the
    players visited."""
    after, visited = "", 0
    while True:
        async with sessions() as session, session.begin():
            await session.execute(_GUARD, {"mode": mode})
            last, count = (
                await session.execute(_CHUNK, {"mode": mode, "after": after, "limit": chunk})
            ).one()
        if not count:
            return visited
        visited += int(count)
        after = str(last)


async def rerank_due(sessions: async_sessionmaker[AsyncSession]) -> int:
    """Re-rank every mode that is due (the background loop's round): the modes re-ranked."""
    modes = await due(sessions)
    for mode in modes:
        await rerank(sessions, mode)
    return len(modes)
