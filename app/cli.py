"""Command line: `python -m app serve | migrate | keys create | openapi | import | replay | smooth`
and the evaluation commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from pydantic import ValidationError

from app.config import Settings, describe_error
from app.evaluation.commands import (
    add_fit_history_parser,
    add_predictive_parser,
    add_tournaments_parser,
    reported,
    run_fit_history,
    run_predictive,
    run_tournaments,
)
from app.imports import commands as history_commands
from app.infra.embedded import EmbeddedServers, EmbeddedUnavailable


class Abort(Exception):
    """Stops the command with one line for the operator."""


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise Abort(describe_error(exc)) from None


def wait_for_postgres(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with psycopg.connect(url, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.Error as exc:
            if time.monotonic() >= deadline:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
                raise Abort(
                    f"configuration error: cannot reach the database after {seconds:g}s: {reason}"
                ) from None
            time.sleep(0.5)


def wait_for_redis(url: str, seconds: float) -> None:
    from redis import Redis
    from redis.exceptions import RedisError

    deadline = time.monotonic() + seconds
    while True:
        try:
            client = Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
            client.ping()
            client.close()
            return
        except (RedisError, OSError, ValueError) as exc:
            if time.monotonic() >= deadline:
                raise Abort(f"configuration error: cannot reach Redis after {seconds:g}s: {exc}") from None
            time.sleep(0.5)


def prepare(settings: Settings, embedded: EmbeddedServers, redis: bool = True) -> tuple[str, str]:
    """Start what is embedded, wait for the servers and migrate. Returns (db url, redis url);
    without `redis` (commands that only touch the database) the Redis URL is empty."""
    try:
        database_url = settings.database_url or embedded.start_postgres()
        redis_url = (settings.redis_url or embedded.start_redis()) if redis else ""
    except EmbeddedUnavailable as exc:
        raise Abort(f"configuration error: {exc}") from None
    wait_for_postgres(database_url, settings.db_connect_wait_s)
    if redis:
        wait_for_redis(redis_url, settings.db_connect_wait_s)
    from app.db.migrate import upgrade

    upgrade(database_url)
    return database_url, redis_url


async def _bootstrap(settings: Settings, database_url: str) -> str | None:
    from app.auth.service import ensure_bootstrap_key
    from app.db.engine import build_engine, build_sessionmaker

    engine = build_engine(settings, database_url)
    try:
        async with build_sessionmaker(engine)() as session, session.begin():
            configured = settings.admin_api_key.get_secret_value() if settings.admin_api_key else None
            return await ensure_bootstrap_key(session, configured)
    finally:
        await engine.dispose()


def serve(settings: Settings) -> None:
    import uvicorn

    from app import logs, workers

    logs.configure(settings.log_format, settings.log_level)
    embedded = EmbeddedServers(settings.data_dir)
    try:
        database_url, redis_url = prepare(settings, embedded)
        key = asyncio.run(_bootstrap(settings, database_url))
        if key is not None:
            print(f"Bootstrap admin API key (shown once, store it now): {key}", flush=True)
        # Workers inherit the resolved servers, so they never start embedded ones themselves.
        os.environ["DATABASE_URL"] = database_url
        os.environ["REDIS_URL"] = redis_url
        print(f"Serving on http://{settings.host}:{settings.port} (docs at /docs)", flush=True)
        options: dict[str, Any] = {
            "factory": True,
            "host": settings.host,
            "port": settings.port,
            "workers": settings.workers,
            "log_config": None,
            "access_log": False,
            "lifespan": "on",
        }
        if settings.workers > 1 and workers.supported():
            # A listening socket per worker (workers.py says why).
            workers.run(uvicorn.Config("app.main:create_app", **options))
        else:
            uvicorn.run("app.main:create_app", **options)
    finally:
        embedded.stop()


def migrate(settings: Settings) -> None:
    embedded = EmbeddedServers(settings.data_dir)
    try:
        prepare(settings, embedded)
        print("database is at the latest migration")
    finally:
        embedded.stop()


def create_key(settings: Settings, name: str, scopes_text: str) -> None:
    from app.auth.keys import parse_scopes

    try:
        scopes = parse_scopes(scopes_text)
    except ValueError as exc:
        raise Abort(f"--scopes: {exc}") from None
    embedded = EmbeddedServers(settings.data_dir)
    try:
        database_url, _ = prepare(settings, embedded)
        print(asyncio.run(_create_key(settings, database_url, name, scopes)))
    finally:
        embedded.stop()


async def _create_key(settings: Settings, database_url: str, name: str, scopes: list) -> str:  # type: ignore[type-arg]
    from app.auth.service import create_key as create
    from app.db.engine import build_engine, build_sessionmaker

    engine = build_engine(settings, database_url)
    try:
        async with build_sessionmaker(engine)() as session, session.begin():
            row, key = await create(session, name, scopes)
            return json.dumps({"id": row.id, "name": name, "scopes": [s.value for s in scopes], "key": key})
    finally:
        await engine.dispose()


def history(settings: Settings, args: argparse.Namespace) -> int:
    from app.imports import commands as history_commands

    embedded = EmbeddedServers(settings.data_dir)
    try:
        database_url, _ = prepare(settings, embedded, redis=False)
        return history_commands.run(args, settings, database_url)
    finally:
        embedded.stop()


def openapi_document() -> str:
    from app.main import create_app

    return json.dumps(create_app(Settings()).openapi(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app", description="Skill service")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="migrate, then serve HTTP")
    commands.add_parser("migrate", help="upgrade the database to the latest migration")
    commands.add_parser("openapi", help="print the OpenAPI document")
    keys = commands.add_parser("keys", help="manage API keys").add_subparsers(dest="action", required=True)
    create = keys.add_parser("create", help="create an API key and print it once")
    create.add_argument("--name", required=True)
    create.add_argument(
        "--scopes", required=True, help="comma-separated: results:write,matchmaking,read,admin"
    )
    add_tournaments_parser(commands)
    add_fit_history_parser(commands)
    add_predictive_parser(commands)
    history_commands.add_parsers(commands)
    args = parser.parse_args(argv)
    try:
        if args.command == "evaluate-tournaments":
            return reported(run_tournaments, args)
        if args.command == "fit-history":
            return reported(run_fit_history, args)
        if args.command == "evaluate-history":
            return reported(run_predictive, args)
        if args.command == "openapi":
            sys.stdout.write(openapi_document())
            return 0
        settings = load_settings()
        if args.command == "serve":
            serve(settings)
        elif args.command == "migrate":
            migrate(settings)
        elif args.command == "keys":
            create_key(settings, args.name, args.scopes)
        elif args.command in ("import", "replay", "smooth"):
            return history(settings, args)
    except Abort as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0
