"""Group commit for POST /v1/matches: the single posts that arrive together share one transaction.

A post joins the process's queue and waits for its outcome. WRITERS writer tasks drain the
queue: each takes what is queued (at most GROUP_MAX matches) and records them in arrival order
in one transaction (app.matches.recording, the pipeline a batch goes through too), then
answers every post of the group. A writer never waits for company: a post that finds a free
writer goes at once, alone if nothing else is queued. Only a commit answers 2xx.

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

from app.db.connections import unreachable
from app.errors import AppError
from app.matches.recording import Outcome, Recorded, Writers
from app.matches.schemas import MatchIn

# Concurrent transactions per process: more overlap the round trips of several groups, fewer
# make groups larger. Matches of different groups that share players wait on the row locks.
# One writer: while its group commits, the next gathers, so a busy process commits fewer,
# larger groups, and PostgreSQL spends less CPU per match; a match alone still goes at once
# (bench/api_matches.py: docs/benchmarks.md, issue #23).
WRITERS = 1
# The most matches one transaction holds: its locks are held for all of them.
GROUP_MAX = 64

_Pending = tuple[MatchIn, "asyncio.Future[Outcome]"]


class GroupCommit:
    def __init__(self, writers: Writers) -> None:
        """`writers`: where the groups are recorded (WRITERS of them)."""
        self._record = writers.record
        self._close = writers.close
        self._queue: deque[_Pending] = deque()
        self._writers: set[asyncio.Task[None]] = set()
        # Writers still draining: counted down by the writer itself, in the same step as it
        # finds the queue empty. A finished task leaves `_writers` only in a later step of the
        # loop (its done callbacks), and a post queued in between, if it had counted the set,
        # would have found no free writer and waited for one that never came.
        self._draining = 0

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
            if len(group) > 1 and not unreachable(exc):
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
        """Let the groups in flight finish (at shutdown), then close the connections."""
        while self._writers:
            with contextlib.suppress(Exception):
                await asyncio.gather(*self._writers)
        await self._close()


def _settle(future: asyncio.Future[Outcome], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
