"""Work the service does beside requests, in the same process: history jobs, folding
leaderboard counts, and moving the leaderboards of modes with drift forward (daily).

Every instance runs these loops. Jobs are claimed with SKIP LOCKED and folding takes an
advisory lock, so instances never do the same work twice and no leader is needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.jobs import service as jobs
from app.leaderboards import drift
from app.leaderboards import repository as leaderboards

log = logging.getLogger(__name__)

JOB_POLL_S = 0.5


async def compact_leaderboards(sessions: async_sessionmaker[AsyncSession]) -> int:
    """Fold the counts of every mode with many unfolded deltas; the number of modes folded."""
    async with sessions() as session, session.begin():
        modes = await leaderboards.modes_to_compact(session)
    done = 0
    for mode in modes:
        async with sessions() as session, session.begin():
            done += await leaderboards.compact(session, mode)
    return done


async def run_jobs(sessions: async_sessionmaker[AsyncSession]) -> None:
    while await jobs.run_next(sessions):
        pass


async def _every(seconds: float, work: Callable[[], Awaitable[object]], name: str) -> None:
    """Run `work` every `seconds` until cancelled; a failed round (database away, say) is
    logged and the next one tries again."""
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("background %s failed: %s", name, exc)


async def maintain(sessions: async_sessionmaker[AsyncSession], every_s: float) -> None:
    await asyncio.gather(
        _every(every_s, lambda: compact_leaderboards(sessions), "leaderboard folding"),
        _every(min(JOB_POLL_S, every_s), lambda: run_jobs(sessions), "job runner"),
        _every(every_s, lambda: drift.rerank_due(sessions), "drift re-rank"),
    )
