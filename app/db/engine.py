"""Engine and session factory, built once in the app's lifespan.

The same settings serve a direct PostgreSQL and one behind PgBouncer in transaction pooling
(docs/operations.md, "Behind PgBouncer"), where consecutive transactions of one client may run on
different server connections, so nothing may outlive a transaction:
- no server-side prepared statements (psycopg prepares a query after 5 runs by default, and
  the next transaction may land where that statement does not exist);
- the statement timeout is set in each transaction (SET LOCAL), not as a startup option
  (PgBouncer refuses `options`) nor per session (it would stay on, or miss, a server connection);
- advisory locks are transaction-scoped (pg_advisory_xact_lock), temp tables ON COMMIT DROP.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from app.config import Settings, sqlalchemy_url

# psycopg's setting for "never prepare server-side", shared with the migrations' engine.
NO_PREPARED_STATEMENTS: dict[str, Any] = {"prepare_threshold": None}
# Every connection of the service: the engine's, and those it opens on its own (connect below).
CONNECT_ARGS: dict[str, Any] = {"connect_timeout": 5, **NO_PREPARED_STATEMENTS}


def statement_timeout(milliseconds: int) -> str:
    """The statement that bounds the transaction it runs in: a hung query never holds a
    request past DB_STATEMENT_TIMEOUT_MS (it then fails as 503). Every transaction of the
    service runs it: the engine's from its begin hook below, the match writers' own
    connections with their BEGIN (app.db.connections). The value is an int (from validated
    settings): SET takes no bind parameters."""
    return f"SET LOCAL statement_timeout = {int(milliseconds)}"


def build_engine(settings: Settings, url: str) -> AsyncEngine:
    engine = create_async_engine(
        sqlalchemy_url(url),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=settings.db_statement_timeout_ms / 1000.0,
        pool_pre_ping=False,
        connect_args=CONNECT_ARGS,
    )
    set_timeout = statement_timeout(settings.db_statement_timeout_ms)

    async def bounded(driver: psycopg.AsyncConnection[Any]) -> None:
        # In a pipeline, psycopg's BEGIN and the SET go out in one round trip (executed
        # alone, each would wait for its own).
        async with driver.pipeline():
            await driver.execute(set_timeout)

    @event.listens_for(engine.sync_engine, "begin")
    def _bounded(connection: Any) -> None:
        try:
            connection.connection.dbapi_connection.run_async(bounded)
        except psycopg.Error:
            # Again through SQLAlchemy, which classifies the error: a lost connection
            # invalidates the whole pool, so the others are not each tried and found dead.
            connection.exec_driver_sql(set_timeout)

    return engine


def build_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
