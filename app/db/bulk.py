"""Bulk work under a session: the psycopg connection itself (COPY, plain tuples), and
lifting the request statement timeout for long statements."""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession


async def driver(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The psycopg connection under the session's transaction."""
    connection = await session.connection()
    raw = (await connection.get_raw_connection()).driver_connection
    assert isinstance(raw, psycopg.AsyncConnection)
    return raw


async def unbounded(session: AsyncSession) -> None:
    """Lift the request statement timeout for this transaction: jobs run long statements."""
    await session.execute(text("SET LOCAL statement_timeout = 0"))
