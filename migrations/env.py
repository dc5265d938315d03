"""Alembic environment: migrations run on a synchronous psycopg 3 connection."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import create_engine, pool

from app.config import sqlalchemy_url
from app.db import models  # noqa: F401 - registers the tables
from app.db.base import Base
from app.db.engine import NO_PREPARED_STATEMENTS

config = context.config
target_metadata = Base.metadata


def include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    """Compare only the tables that have models (app/db/models.py): the migrations own the
    schema, and the other tables are written by SQL, not described twice."""
    return not (type_ == "table" and reflected and compare_to is None)


def _configure(**options: object) -> None:
    context.configure(
        target_metadata=target_metadata, include_object=include_object, compare_type=True, **options
    )


def _url() -> str:
    url = config.attributes.get("url") or os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit(
            "DATABASE_URL is not set (or run `python -m app migrate`, which starts the embedded one)"
        )
    return sqlalchemy_url(url)


def run_migrations_offline() -> None:
    _configure(url=_url(), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    # No server-side prepared statements: migrations may run through PgBouncer (app/db/engine.py).
    engine = create_engine(_url(), poolclass=pool.NullPool, connect_args=NO_PREPARED_STATEMENTS)
    with engine.connect() as conn:
        _configure(connection=conn)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
