"""Read-only transactions of one round trip, for the hot reads (a player's leaderboard standing).

Through the session a read is three round trips (BEGIN with the statement timeout, the query,
COMMIT), each a wait at the back of a busy event loop, plus the ORM's per-transaction work.
Here BEGIN READ ONLY, the timeout, the query and COMMIT go out together in one pipeline, on
connections of the service's own (app.db.connections), with the same settings as the engine's,
so it runs behind PgBouncer in transaction pooling too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg.rows import namedtuple_row
from sqlalchemy.ext.asyncio import AsyncEngine

from app.config import Settings
from app.db.connections import Connections


class Reads:
    """At most `size` reads at once on the engine's database; more wait for a turn."""

    def __init__(self, engine: AsyncEngine, settings: Settings, size: int) -> None:
        self._connections = Connections(engine, settings, size)
        begin, timeout = self._connections.begin
        self._begin = (begin + " READ ONLY", timeout)

    async def rows(self, query: str, params: Mapping[str, Any]) -> list[Any]:
        """The rows of `query` (psycopg's %(name)s placeholders), as named tuples."""
        async with self._connections.connection() as conn:
            async with conn.pipeline():
                for statement in self._begin:
                    await conn.execute(statement)
                cursor = conn.cursor(row_factory=namedtuple_row)
                await cursor.execute(query, params)
                await conn.execute("COMMIT")
            return await cursor.fetchall()

    async def close(self) -> None:
        await self._connections.close()
