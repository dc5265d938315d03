"""Group commit for POST /v1/matches: the single posts that arrive together share one transaction.

A post joins the process's queue and waits for its outcome. Up to WRITERS writer tasks drain
the queue: each takes what is queued (at most GROUP_MAX matches), records them in arrival
order in one transaction (app.matches.service.record_group), commits once, then answers
every post of the group. A writer never waits for company: a post that finds a free writer
goes at once, alone if nothing else is queued. Only a commit answers 2xx.

Each match stands alone inside its group: a 409 or 422 is that post's answer only. When the
group's transaction fails, nothing of it was applied. When the database is out of reach
(the connection lost or refused), every post of the group gets that error (503): each alone
would too. Any other failure (a statement timeout, a serialisation failure, a bug) retries
each of the group's matches in a transaction of its own, so the error reaches only the
posts it must.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

import psycopg
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.errors import AppError
from app.matches.schemas import MatchIn
from app.matches.service import Outcome, Recorded, record_group

# Concurrent transactions per process: more overlap the round trips of several groups, fewer
# make groups larger. Matches of different groups that share players wait on the row locks.
WRITERS = 4
# The most matches one transaction holds: its locks are held for all of them.
GROUP_MAX = 64

_Pending = tuple[MatchIn, "asyncio.Future[Outcome]"]


class GroupCommit:
    def __init__(self, engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._engine = engine
        self._sessions = sessions
        self._queue: deque[_Pending] = deque()
        self._writers: set[asyncio.Task[None]] = set()

    async def record(self, match: MatchIn) -> Recorded:
        """The match's answer once its group has committed; raises what the single post
        would (AppError, or the database's error)."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._queue.append((match, future))
        if len(self._writers) < WRITERS:
            writer = asyncio.create_task(self._drain())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        # A cancelled post (client gone) does not cancel its group: the match may commit.
        outcome = await asyncio.shield(future)
        if isinstance(outcome, AppError):
            raise outcome
        return outcome

    async def _drain(self) -> None:
        while self._queue:
            group = [self._queue.popleft() for _ in range(min(GROUP_MAX, len(self._queue)))]
            await self._commit(group)

    async def _commit(self, group: list[_Pending]) -> None:
        try:
            outcomes = await record_group(self._engine, self._sessions, [match for match, _ in group])
        except Exception as exc:
            if len(group) > 1 and not _unreachable(exc):
                await asyncio.gather(*(self._commit([pending]) for pending in group))
                return
            for _, future in group:
                _settle(future, exc)
            return
        except BaseException as exc:  # cancelled (shutdown): no post may wait forever
            for _, future in group:
                _settle(future, exc)
            raise
        for (_, future), outcome in zip(group, outcomes, strict=True):
            if not future.done():
                future.set_result(outcome)

    async def close(self) -> None:
        """Let the groups in flight finish (at shutdown)."""
        while self._writers:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._writers)


def _settle(future: asyncio.Future[Outcome], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _unreachable(error: Exception) -> bool:
    """Whether `error` says the database cannot be reached, rather than that this group failed."""
    if isinstance(error, PoolTimeout):
        return True
    if isinstance(error, DBAPIError):
        if error.connection_invalidated:
            return True
        error = error.orig  # type: ignore[assignment]
    if isinstance(
        error,
        (psycopg.errors.QueryCanceled, psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected),
    ):
        return False
    return isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError))
