"""Group commit for POST /v1/matches: the single posts that arrive together share one transaction.

A post joins the process's queue and waits for its outcome. Up to WRITERS writer tasks drain
the queue: each takes what is queued (at most GROUP_MAX matches), records them in arrival
order in one transaction (app.matches.service.record_and_commit), commits once, then answers
every post of the group. A writer never waits for company: a post that finds a free writer
goes at once, alone if nothing else is queued. Only a commit answers 2xx.

Each match stands alone inside its group: a 409 or 422 is that post's answer only. When the
group's transaction fails, nothing of it was applied. When the database is out of reach
(the connection lost or refused), every post of the group gets that error (503): each alone
would too. Any other failure (a statement timeout, a serialisation failure, a bug) retries
each of the group's matches in a transaction of its own, so the error reaches only the
posts it must.

The writers run below the engine: each group takes one of the queue's own psycopg
connections (at most WRITERS, opened on demand and kept), begins its transaction in the
claim's round trip and commits in the write's (app.matches.service.record_and_commit): two
round trips a group, and none of the session's or the pool's per-transaction work.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.db.engine import connect, statement_timeout
from app.errors import AppError
from app.matches.schemas import MatchIn
from app.matches.service import Outcome, Recorded, record_and_commit

# Concurrent transactions per process: more overlap the round trips of several groups, fewer
# make groups larger. Matches of different groups that share players wait on the row locks.
# One writer: while its group commits, the next gathers, so a busy process commits fewer,
# larger groups, and PostgreSQL spends less CPU per match (bench/api_matches.py at 32
# connections, interleaved runs on a busy machine: 0.39-0.41 ms of PostgreSQL CPU per match
# with one, 0.46-0.47 with two; the service's own CPU the same, 0.29-0.31 ms). A match
# alone still goes at once (docs/benchmarks.md, issue #23).
WRITERS = 1
# The most matches one transaction holds: its locks are held for all of them.
GROUP_MAX = 64

_Pending = tuple[MatchIn, "asyncio.Future[Outcome]"]


Connection = psycopg.AsyncConnection[Any]


class GroupCommit:
    def __init__(
        self, engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession], statement_timeout_ms: int
    ) -> None:
        """`statement_timeout_ms`: how long a statement of a group may run (DB_STATEMENT_TIMEOUT_MS)."""
        self._engine = engine
        self._sessions = sessions
        # The writers' connections are in autocommit: a group's BEGIN goes with its claim.
        self._setup = ("BEGIN", statement_timeout(statement_timeout_ms))
        self._queue: deque[_Pending] = deque()
        self._writers: set[asyncio.Task[None]] = set()
        # Writers still draining: counted down by the writer itself, in the same step as it
        # finds the queue empty. A finished task leaves `_writers` only in a later step of the
        # loop (its done callbacks), and a post queued in between, if it had counted the set,
        # would have found no free writer and waited for one that never came.
        self._draining = 0
        self._idle: list[Connection] = []  # the writers' connections between groups
        # Groups retried match by match run side by side: still no more connections than writers.
        self._connections = asyncio.Semaphore(WRITERS)

    async def record(self, match: MatchIn) -> Recorded:
        """The match's answer once its group has committed; raises what the single post
        would (AppError, or the database's error)."""
        future: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        self._queue.append((match, future))
        if self._draining < WRITERS:
            self._draining += 1
            writer = asyncio.create_task(self._drain())
            self._writers.add(writer)
            writer.add_done_callback(self._writers.discard)
        # A cancelled post (client gone) does not cancel its group: the match may commit.
        outcome = await asyncio.shield(future)
        if isinstance(outcome, AppError):
            raise outcome
        return outcome

    async def _drain(self) -> None:
        try:
            while self._queue:
                group = [self._queue.popleft() for _ in range(min(GROUP_MAX, len(self._queue)))]
                await self._commit(group)
        finally:
            self._draining -= 1

    async def _commit(self, group: list[_Pending]) -> None:
        try:
            outcomes = await self._record([match for match, _ in group])
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

    async def _record(self, matches: list[MatchIn]) -> list[Outcome]:
        """The group's outcomes, committed, on a connection of the queue's."""
        async with self._connections:
            conn = self._idle.pop() if self._idle else await connect(self._engine)
            try:
                outcomes = await record_and_commit(conn, self._sessions, matches, self._setup)
            except BaseException as exc:
                if isinstance(exc, Exception) and _unreachable(exc):
                    # The server went away (or restarted): the idle connections went with it.
                    await self._drop_idle()
                await _release(conn, self._idle if isinstance(exc, Exception) else None)
                raise
            self._idle.append(conn)
            return outcomes

    async def _drop_idle(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        """Let the groups in flight finish (at shutdown), then close the connections."""
        while self._writers:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._writers)
        await self._drop_idle()


async def _release(conn: Connection, idle: list[Connection] | None) -> None:
    """After a failed group: back to `idle` once rolled back, else closed."""
    if idle is not None and not conn.closed:
        with contextlib.suppress(Exception):  # a broken connection is closed below
            await conn.rollback()
        if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
            idle.append(conn)
            return
    with contextlib.suppress(Exception):
        await conn.close()


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
