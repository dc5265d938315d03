"""The hot reads' one-round-trip transactions (app.db.reads): read-only, bounded by the statement
timeout, on a connection that stays usable after a failure, directly and through PgBouncer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import psycopg
import pytest

from app.config import Settings
from app.db.engine import build_engine
from app.db.reads import Reads
from tests.pgbouncer import PgBouncer

TIMEOUT_MS = 300


async def _reads(settings: Settings, url: str) -> AsyncIterator[Reads]:
    config = settings.model_copy(update={"db_statement_timeout_ms": TIMEOUT_MS})
    engine = build_engine(config, url)
    reads = Reads(engine, config, 1)
    try:
        yield reads
    finally:
        await reads.close()
        await engine.dispose()


@pytest.fixture
async def reads(settings: Settings, database_url: str) -> AsyncIterator[Reads]:
    async for made in _reads(settings, database_url):
        yield made


@pytest.fixture
async def bounced(settings: Settings, pgbouncer: PgBouncer, database_url: str) -> AsyncIterator[Reads]:
    async for made in _reads(settings, pgbouncer.url(urlsplit(database_url).path.lstrip("/"))):
        yield made


async def test_a_read_answers_named_rows_in_a_bounded_read_only_transaction(reads: Reads) -> None:
    rows = await reads.rows(
        "SELECT %(n)s::int AS n, current_setting('transaction_read_only') AS ro, "
        "current_setting('statement_timeout') AS timeout",
        {"n": 7},
    )
    assert [(r.n, r.ro, r.timeout) for r in rows] == [(7, "on", f"{TIMEOUT_MS}ms")]


async def test_a_write_is_refused_and_the_connection_stays_usable(reads: Reads) -> None:
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        await reads.rows("CREATE TEMP TABLE read_only_probe (x int)", {})
    assert (await reads.rows("SELECT 1 AS one", {}))[0].one == 1


async def test_a_slow_read_is_cancelled_by_the_statement_timeout(reads: Reads) -> None:
    with pytest.raises(psycopg.errors.QueryCanceled):
        await reads.rows("SELECT pg_sleep(2)", {})
    assert (await reads.rows("SELECT 2 AS two", {}))[0].two == 2


async def test_through_pgbouncer_the_timeout_holds_and_nothing_is_prepared(bounced: Reads) -> None:
    for n in range(8):  # psycopg would prepare after 5 runs unless told not to
        rows = await bounced.rows(
            "SELECT count(*) AS prepared, current_setting('statement_timeout') AS timeout "
            "FROM pg_prepared_statements WHERE name <> %(n)s",
            {"n": str(n)},
        )
    assert (rows[0].prepared, rows[0].timeout) == (0, f"{TIMEOUT_MS}ms")
    with pytest.raises(psycopg.errors.QueryCanceled):
        await bounced.rows("SELECT pg_sleep(2)", {})
