"""Per-key rate limits: 429 problem+json with Retry-After once a key's bucket is empty."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI

from app.auth.rate_limit import TokenBuckets
from app.config import Settings
from tests.conftest import ADMIN_KEY


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_bursts_then_refills_at_the_rate() -> None:
    clock = Clock()
    buckets = TokenBuckets(rate=2.0, burst=3, clock=clock)
    assert [buckets.take("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("k") == pytest.approx(0.5)
    assert buckets.take("other") == 0.0  # keys do not share a bucket
    clock.now += 0.5
    assert buckets.take("k") == 0.0
    assert buckets.take("k") == pytest.approx(0.5)
    clock.now += 60
    assert [buckets.take("k") for _ in range(4)][-1] > 0  # refills only up to the burst
    assert TokenBuckets(rate=0, burst=1).take("k") == 0.0  # 0 turns the limit off


@pytest.fixture
async def limited_app(app: FastAPI, settings: Settings) -> AsyncIterator[FastAPI]:
    """A second app on the same database (whose bootstrap key `app` made), with a tight limit."""
    from app.main import create_app

    application = create_app(settings.model_copy(update={"rate_limit_per_s": 2.0, "rate_limit_burst": 3}))
    async with application.router.lifespan_context(application):
        yield application


async def test_over_the_rate_a_key_gets_429_with_retry_after(limited_app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=limited_app)
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        statuses = [(await client.get("/v1/modes", headers=admin)).status_code for _ in range(3)]
        assert statuses == [200, 200, 200]
        limited = await client.get("/v1/modes", headers=admin)
        assert limited.status_code == 429
        assert limited.headers["content-type"] == "application/problem+json"
        assert limited.headers["retry-after"] == "1"
        assert "rate" in limited.json()["detail"]
        # Health and metrics carry no key and are never limited.
        assert (await client.get("/healthz")).status_code == 200
        await asyncio.sleep(0.6)
        assert (await client.get("/v1/modes", headers=admin)).status_code == 200
