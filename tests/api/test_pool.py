"""A full connection pool is an overload, answered 503 with Retry-After, never 500; and a
burst of requests with a key the process has not cached yet does not starve the pool."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.auth.service import ensure_bootstrap_key
from app.config import Settings
from app.main import create_app
from tests.conftest import ADMIN_KEY

HEADERS = {"Authorization": f"Bearer {ADMIN_KEY}"}


@contextlib.asynccontextmanager
async def small_service(settings: Settings, wait_ms: int) -> AsyncIterator[FastAPI]:
    """The service with two pooled connections (and two overflow), waiting `wait_ms` for one."""
    tiny = settings.model_copy(update={"db_pool_size": 2, "db_statement_timeout_ms": wait_ms})
    application = create_app(tiny)
    async with application.router.lifespan_context(application):
        async with application.state.resources.sessions() as session, session.begin():
            await ensure_bootstrap_key(session, ADMIN_KEY)
        yield application


@pytest.fixture
async def small(settings: Settings) -> AsyncIterator[FastAPI]:
    """The small service with a short wait for a connection."""
    async with small_service(settings, 1000) as application:
        yield application


def match(n: int) -> dict[str, Any]:
    return {
        "match_id": f"pool-{n}",
        "mode": "default",
        "teams": [
            {"players": [{"id": f"pool-a{n}"}], "rank": 0},
            {"players": [{"id": f"pool-b{n}"}], "rank": 1},
        ],
    }


async def test_a_burst_of_posts_with_a_cold_key_never_starves_the_pool(settings: Settings) -> None:
    from app.auth import service as auth

    # A wait for a connection long enough for 40 posts through 4 connections on a loaded
    # machine (1 s once was not, beside three other test workers); a starved pool never
    # frees one however long the wait.
    async with small_service(settings, 5000) as application:
        auth._known.clear()  # the key is looked up by every request of the burst at once
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as http:
            answers = await asyncio.gather(
                *(http.post("/v1/matches", json=match(n), headers=HEADERS) for n in range(40))
            )
    assert [a.status_code for a in answers] == [201] * 40, {a.status_code: a.text for a in answers}


async def test_no_free_connection_answers_503_with_retry_after(small: FastAPI) -> None:
    engine = small.state.resources.engine
    held = [await engine.connect() for _ in range(4)]  # pool and overflow, all taken
    try:
        transport = httpx.ASGITransport(app=small)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=30) as http:
            answer = await http.get("/v1/modes/default", headers=HEADERS)
    finally:
        for connection in held:
            await connection.close()
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.headers["Retry-After"]
    assert "busy" in answer.json()["detail"]
