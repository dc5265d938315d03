"""Work the service does beside requests, in the same process: folding leaderboard counts.

Every instance runs the loop; advisory locks make concurrent instances skip work
another is already doing, so the loop needs no leader.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.leaderboards import repository as leaderboards

log = logging.getLogger(__name__)


async def compact_leaderboards(sessions: async_sessionmaker[AsyncSession]) -> int:
    """Fold the counts of every mode with many unfolded deltas; the number of modes folded."""
    async with sessions() as session, session.begin():
        modes = await leaderboards.modes_to_compact(session)
    done = 0
    for mode in modes:
        async with sessions() as session, session.begin():
            done += await leaderboards.compact(session, mode)
    return done


async def maintain(sessions: async_sessionmaker[AsyncSession], every_s: float) -> None:
    """Run until cancelled. A failed round (database away, say) is logged and retried."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await compact_leaderboards(sessions)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the next round tries again
            log.warning("background maintenance failed: %s", exc)
