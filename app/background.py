"""Work the service does beside requests, in the same process: history jobs, folding
leaderboard counts, moving the leaderboards of modes with drift forward (daily), and failing
the queue's overdue ready checks.

Every instance runs these loops. Jobs are claimed with SKIP LOCKED, folding takes an
advisory lock, and a ready check fails in one Lua script that only the first sweeper's run
changes anything in, so instances never do the same work twice and no leader is needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.infra.redis_client import RedisClient
from app.jobs import service as jobs
from app.leaderboards import drift
from app.leaderboards import repository as leaderboards
from app.queues import service as queues

log = logging.getLogger(__name__)

JOB_POLL_S = 0.5
# How often each instance looks for ready checks past their deadline: a proposal fails at most
# about this long after it.
DEADLINE_SWEEP_S = 0.5
# Every this many sweeps, the modes whose ready check is off too (proposals left pending by
# turning it off).
EVERY_MODE_ROUNDS = 20


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


async def sweep_deadlines(
    sessions: async_sessionmaker[AsyncSession], redis: RedisClient, every_mode: bool
) -> int:
    async with sessions() as session:
        return await queues.sweep_deadlines(session, redis, every_mode)


def _sweeps(sessions: async_sessionmaker[AsyncSession], redis: RedisClient) -> Callable[[], Awaitable[int]]:
    """The ready checks' sweep: the modes that run one each round, every mode each
    EVERY_MODE_ROUNDS rounds."""
    rounds = 0

    async def sweep() -> int:
        nonlocal rounds
        rounds += 1
        return await sweep_deadlines(sessions, redis, rounds % EVERY_MODE_ROUNDS == 0)

    return sweep


async def maintain(sessions: async_sessionmaker[AsyncSession], redis: RedisClient, every_s: float) -> None:
    await asyncio.gather(
        _every(every_s, lambda: compact_leaderboards(sessions), "leaderboard folding"),
        _every(min(JOB_POLL_S, every_s), lambda: run_jobs(sessions), "job runner"),
        _every(every_s, lambda: drift.rerank_due(sessions), "drift re-rank"),
        _every(DEADLINE_SWEEP_S, _sweeps(sessions, redis), "ready check sweep"),
    )
