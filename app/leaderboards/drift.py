"""The daily re-rank of a mode with drift: its leaderboards move forward to the present.

A leaderboard orders by the stored `conservative` column, which in a mode with drift is the
estimate drifted from each player's last match to the mode's `drift_as_of` (app.db.conservative,
migration 0015). The order by a drifted estimate changes with time alone, which no index
follows, so the column is moved forward in steps: when `drift_as_of` is older than RERANK_AFTER,
one instance claims the mode (the UPDATE of its modes row: the others see the new instant),
which puts every row behind (`rescore_after`, migration 0017), and the rows are re-scored in
batches (app.leaderboards.rescore: each a transaction of its own that takes its rows' locks in
the order match posts take them, with the mode's lock shared as a post holds it). The
leaderboard counts follow in each batch's transaction (the trigger of migration 0003), so ranks
stay exact throughout; a row not yet rewritten is at most RERANK_AFTER plus the re-rank's own
time behind: within a day's drift.

The walk moves `rescore_after` on in each batch's transaction, so a re-rank cut short (a crash,
a restart) resumes where it stopped at the loop's next round, on any instance. A re-score that
a mode's retier job runs (after a change of k or drift) is the job's to walk while it is queued
or running; the loop resumes it only once no job is at it (one that failed, say).

Tiers do not move here: a player's tier moves at their next match (docs/api.md).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.leaderboards import rescore
from app.leaderboards.retier import JOB_KIND

RERANK_AFTER = dt.timedelta(hours=12)

_DUE = text("""
    UPDATE modes SET drift_as_of = now(), rescore_after = ''
    WHERE drift_per_day > 0 AND (drift_as_of IS NULL OR drift_as_of < now() - CAST(:after AS interval))
    RETURNING name
""")

# Modes with drift whose walk stopped short, and that no retier job is to walk.
_LEFT = text("""
    SELECT name FROM modes m
    WHERE drift_per_day > 0 AND rescore_after IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.mode = m.name AND j.kind = :job_kind
                      AND j.status IN ('queued', 'running'))
    ORDER BY name
""")


async def due(sessions: async_sessionmaker[AsyncSession], after: dt.timedelta = RERANK_AFTER) -> list[str]:
    """Claim the modes whose leaderboards are older than `after`: their drift_as_of is now,
    and every row of theirs is behind it."""
    async with sessions() as session, session.begin():
        return [row[0] for row in (await session.execute(_DUE, {"after": after})).all()]


async def left(sessions: async_sessionmaker[AsyncSession]) -> list[str]:
    """The modes with drift whose re-rank (or re-score) stopped short with no job at it."""
    async with sessions() as session, session.begin():
        return [row[0] for row in (await session.execute(_LEFT, {"job_kind": JOB_KIND})).all()]


async def rerank(sessions: async_sessionmaker[AsyncSession], mode: str, batch: int = rescore.BATCH) -> int:
    """Re-score the mode's rows still behind, batch by batch: the players visited."""
    return await rescore.walk(sessions, mode, batch)


async def rerank_due(sessions: async_sessionmaker[AsyncSession]) -> int:
    """Re-rank every mode that is due, and resume every re-rank left short (the background
    loop's round): the modes re-ranked."""
    await due(sessions)
    modes = await left(sessions)
    for mode in modes:
        await rerank(sessions, mode)
    return len(modes)
