"""Schema changes a test makes to inject a fault (a trigger that raises, sleeps or logs), run so
that a lock they wait for fails the test with its holder named instead of hanging it.

CREATE TRIGGER waits for every transaction writing the table, DROP TRIGGER for every one that
has so much as read it. A transaction the service left open would hang such a test until
pytest-timeout; here it fails after LOCK_WAIT with the sessions that held the lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

LOCK_WAIT = "30s"


def run(database_url: str, *statements: str) -> None:
    """Run `statements` in autocommit, each waiting at most LOCK_WAIT for its locks."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"SET lock_timeout = '{LOCK_WAIT}'")
        for statement in statements:
            try:
                conn.execute(statement)
            except psycopg.errors.LockNotAvailable:
                first = statement.strip().splitlines()[0]
                raise AssertionError(
                    f"{first!r} waited {LOCK_WAIT}: {_holders(database_url, conn)}"
                ) from None


def _holders(database_url: str, waiter: psycopg.Connection) -> str:
    """The sessions that held what the waiter waited for (it no longer waits: looked up by
    the sessions open on the database in a transaction)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid, application_name, state, now() - xact_start, left(query, 200) "
            "FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL "
            "AND pid NOT IN (pg_backend_pid(), %s)",
            (waiter.info.backend_pid,),
        ).fetchall()
    return "; ".join(f"pid {r[0]} app {r[1]!r} {r[2]} for {r[3]}: {r[4]!r}" for r in rows) or "none left open"


@contextmanager
def failing_rows(database_url: str, name: str, event: str, table: str, player_id: str) -> Iterator[None]:
    """A real fault inside a transaction: trigger `name` raises 'injected failure' after an
    `event` (INSERT or UPDATE) of a row of `table` whose player_id is `player_id`, once the
    statement has written its rows; dropped at exit."""
    run(
        database_url,
        f"""
        CREATE FUNCTION {name}() RETURNS trigger AS $$
        BEGIN
            IF NEW.player_id = '{player_id}' THEN RAISE EXCEPTION 'injected failure'; END IF;
            RETURN NEW;
        END
        $$ LANGUAGE plpgsql""",
        f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()",
    )
    try:
        yield
    finally:
        run(database_url, f"DROP TRIGGER {name} ON {table}", f"DROP FUNCTION {name}()")
