"""Connections of the service's own, outside the engine's pool: the match writers'.

A writer of matches (app.matches.recording) sends its transaction's BEGIN and settings in the
claim's round trip and its COMMIT in the write's, two round trips a transaction, none of the
session's or the pool's per-transaction work. It needs a psycopg connection in autocommit that
it owns: `Connections` opens them on demand, at most `size` at once (the writers' turns), and
keeps them between transactions.

The same settings as the engine's (app/db/engine.py), so it runs behind PgBouncer in
transaction pooling too: nothing prepared server-side, the statement timeout set in each
transaction (`begin`), nothing kept from one transaction to the next.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.db.engine import CONNECT_ARGS, statement_timeout

Connection = psycopg.AsyncConnection[Any]


class Connections:
    """At most `size` connections at once to the engine's database, each in autocommit; a
    caller waits for its turn in `connection()`."""

    def __init__(self, engine: AsyncEngine, settings: Settings, size: int) -> None:
        self._engine = engine
        # What begins each transaction, sent by the writer with its first statements: BEGIN
        # and the engine's statement timeout (the engine sends the same from its begin hook).
        self.begin = ("BEGIN", statement_timeout(settings.db_statement_timeout_ms))
        self._idle: list[Connection] = []
        self._turns = asyncio.Semaphore(size)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A connection with no transaction open, for the block's transaction. After an error
        it goes back only once rolled back; when the error says the server is out of reach,
        it and the idle ones are closed (the server went away, or restarted)."""
        async with self._turns:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                yield conn
            except BaseException as exc:
                if isinstance(exc, Exception) and unreachable(exc):
                    await self._drop_idle()
                await self._release(conn, keep=isinstance(exc, Exception))
                raise
            self._idle.append(conn)

    async def _connect(self) -> Connection:
        engine = self._engine
        args, params = engine.sync_engine.dialect.create_connect_args(engine.url)
        return await psycopg.AsyncConnection.connect(*args, **{**params, **CONNECT_ARGS}, autocommit=True)

    async def _release(self, conn: Connection, keep: bool) -> None:
        if keep and not conn.closed:
            with contextlib.suppress(Exception):  # a broken connection is closed below
                await conn.rollback()
            if not conn.closed and conn.info.transaction_status == TransactionStatus.IDLE:
                self._idle.append(conn)
                return
        with contextlib.suppress(Exception):
            await conn.close()

    async def _drop_idle(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        """Close the idle connections (at shutdown, once the writers are done)."""
        await self._drop_idle()


def unreachable(error: Exception) -> bool:
    """Whether `error` says the database cannot be reached, rather than that one transaction
    failed (a statement timeout, a serialisation failure, a deadlock, a bug)."""
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
