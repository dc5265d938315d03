"""Through PgBouncer in transaction pooling (docs/operations.md, "Behind PgBouncer"): the statement
timeout holds, nothing is prepared server-side, and migrations run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest
from sqlalchemy import text

from app.config import Settings
from app.db.engine import build_engine
from app.db.migrate import downgrade, upgrade
from tests import ddl
from tests.conftest import ADMIN_KEY
from tests.pgbouncer import PgBouncer

TIMEOUT_MS = 300

# Any insert of a match named slow-* takes 2 s: longer than TIMEOUT_MS.
_SLOW = """
CREATE OR REPLACE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$;
DROP TRIGGER IF EXISTS slow_insert ON matches;
CREATE TRIGGER slow_insert BEFORE INSERT ON matches
  FOR EACH ROW WHEN (NEW.match_id LIKE 'slow-%') EXECUTE FUNCTION slow_insert();
"""


def _through(pgbouncer: PgBouncer, url: str) -> str:
    return pgbouncer.url(urlsplit(url).path.lstrip("/"))


@pytest.fixture
async def bounded(
    settings: Settings, pgbouncer: PgBouncer, database_url: str
) -> AsyncIterator[httpx.AsyncClient]:
    """The service through PgBouncer with DB_STATEMENT_TIMEOUT_MS=300."""
    from app.main import create_app

    config = settings.model_copy(
        update={"database_url": _through(pgbouncer, database_url), "db_statement_timeout_ms": TIMEOUT_MS}
    )
    application = create_app(config)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http


async def test_the_statement_timeout_holds_through_pgbouncer(
    bounded: httpx.AsyncClient, mode: str, database_url: str
) -> None:
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    ddl.run(database_url, _SLOW)
    try:
        teams = [{"players": [{"id": "to1"}], "rank": 0}, {"players": [{"id": "to2"}], "rank": 1}]
        slow = await bounded.post(
            "/v1/matches", json={"match_id": f"slow-{mode}", "mode": mode, "teams": teams}, headers=headers
        )
        assert slow.status_code == 503, slow.text
        assert slow.headers["retry-after"]
        # The cancelled transaction left nothing behind, and the next one runs normally.
        assert (await bounded.get(f"/v1/matches/slow-{mode}", headers=headers)).status_code == 404
        fast = await bounded.post(
            "/v1/matches", json={"match_id": f"fast-{mode}", "mode": mode, "teams": teams}, headers=headers
        )
        assert fast.status_code == 201, fast.text
    finally:
        ddl.run(database_url, "DROP TRIGGER IF EXISTS slow_insert ON matches")


async def test_nothing_is_prepared_server_side(
    settings: Settings, pgbouncer: PgBouncer, database_url: str
) -> None:
    engine = build_engine(settings, _through(pgbouncer, database_url))
    try:
        async with engine.begin() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            for n in range(10):  # psycopg prepares after 5 runs unless told not to
                await conn.execute(text("SELECT count(*) FROM modes WHERE name <> :n"), {"n": str(n)})
                await raw.execute("SELECT count(*) FROM players WHERE id <> %s", (str(n),))  # type: ignore[union-attr]
            prepared = (await conn.execute(text("SELECT count(*) FROM pg_prepared_statements"))).scalar()
            timeout = (
                await conn.execute(text("SELECT setting FROM pg_settings WHERE name = 'statement_timeout'"))
            ).scalar()
        assert prepared == 0
        assert timeout == str(settings.db_statement_timeout_ms)
    finally:
        await engine.dispose()


def test_migrations_run_through_pgbouncer(make_database, pgbouncer: PgBouncer) -> None:  # type: ignore[no-untyped-def]
    direct = make_database("ssbounce")
    through = _through(pgbouncer, direct)
    upgrade(through)
    downgrade(through)
    upgrade(through)
    with psycopg.connect(direct, autocommit=True) as conn:
        assert conn.execute("SELECT name FROM modes").fetchall() == [("default",)]
        assert conn.execute("SELECT count(*) FROM alembic_version").fetchone() == (1,)
