"""Rate limits: per key, and on failed authentications per client address; 429 problem+json
with Retry-After once a bucket is empty. And the key cache's bound."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from ipaddress import ip_network

import httpx
import pytest
from fastapi import FastAPI

from app.auth.rate_limit import TokenBuckets
from app.auth.service import KNOWN_KEYS_CACHED, UNKNOWN_KEYS_CACHED, cached_keys
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
async def limited_app(app: FastAPI, settings: Settings) -> AsyncIterator[tuple[FastAPI, Clock]]:
    """A second app on the same database (whose bootstrap key `app` made), with a tight limit
    on a clock of the test's: however slowly the requests go, no token comes back until the
    test moves the clock."""
    from app.main import create_app

    application = create_app(settings.model_copy(update={"rate_limit_per_s": 2.0, "rate_limit_burst": 3}))
    async with application.router.lifespan_context(application):
        clock = Clock()
        application.state.resources.limits.clock = clock
        yield application, clock


async def test_over_the_rate_a_key_gets_429_with_retry_after(limited_app: tuple[FastAPI, Clock]) -> None:
    application, clock = limited_app
    transport = httpx.ASGITransport(app=application)
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
        clock.now += 0.4  # 0.8 of a token: still empty
        assert (await client.get("/v1/modes", headers=admin)).status_code == 429
        clock.now += 0.1
        assert (await client.get("/v1/modes", headers=admin)).status_code == 200


@pytest.fixture
async def guarded_app(app: FastAPI, settings: Settings) -> AsyncIterator[FastAPI]:
    """An app on the same database with the failed-authentication limit on (5, then one in
    100 s, on a clock that stands still: no token comes back however long a test runs) and one
    trusted proxy, 10.0.0.5."""
    from app.main import create_app

    update = {
        "auth_failures_per_s": 0.01,
        "auth_failure_burst": 5,
        "trusted_proxies": (ip_network("10.0.0.5"),),
    }
    application = create_app(settings.model_copy(update=update))
    async with application.router.lifespan_context(application):
        application.state.resources.auth_failures.clock = Clock()
        yield application


def _from(application: FastAPI, address: str) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=application, client=(address, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://test")


def _random_key(n: int) -> dict[str, str]:
    # Well-formed ids and free text (an ADMIN_API_KEY may be any text): both are looked up.
    key = f"ssk_{secrets.token_hex(8)}_{secrets.token_urlsafe(16)}" if n % 2 else secrets.token_urlsafe(24)
    return {"Authorization": f"Bearer {key}"}


async def test_random_keys_get_401_then_429_and_a_valid_key_from_that_address_never_does(
    guarded_app: FastAPI,
) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with _from(guarded_app, "192.0.2.7") as client:
        statuses = []
        for n in range(30):
            statuses.append((await client.get("/v1/modes", headers=_random_key(n))).status_code)
            # The same address, a valid key: the failures before it never hold it back.
            assert (await client.get("/v1/modes", headers=admin)).status_code == 200
        assert statuses[:5] == [401] * 5
        assert set(statuses[5:]) == {429}
        limited = await client.get("/v1/modes", headers=_random_key(0))
        assert limited.headers["content-type"] == "application/problem+json"
        assert 1 <= int(limited.headers["retry-after"]) <= 100
        assert "failed authentications" in limited.json()["detail"]
        assert (await client.get("/v1/modes")).status_code == 429  # no key at all is a failure too
    async with _from(guarded_app, "192.0.2.8") as other:
        assert (await other.get("/v1/modes", headers=_random_key(1))).status_code == 401  # its own budget


async def test_the_key_cache_stays_bounded(guarded_app: FastAPI) -> None:
    # More random keys than the cache holds: each one a lookup, then cached as unknown.
    sizes = []
    async with _from(guarded_app, "192.0.2.9") as client:
        for n in range(UNKNOWN_KEYS_CACHED + 200):
            assert (await client.get("/v1/modes", headers=_random_key(n))).status_code in (401, 429)
            sizes.append(cached_keys())
    assert max(unknown for _, unknown in sizes) <= UNKNOWN_KEYS_CACHED
    assert max(known for known, _ in sizes) <= KNOWN_KEYS_CACHED


async def test_x_forwarded_for_counts_only_from_a_trusted_proxy(guarded_app: FastAPI) -> None:
    async with _from(guarded_app, "192.0.2.10") as untrusted:
        # Each request claims another client: ignored, all are 192.0.2.10's failures.
        statuses = [
            (
                await untrusted.get(
                    "/v1/modes", headers={**_random_key(n), "X-Forwarded-For": f"198.51.100.{n}"}
                )
            ).status_code
            for n in range(8)
        ]
        assert statuses == [401] * 5 + [429] * 3
    async with _from(guarded_app, "10.0.0.5") as proxy:
        # Behind the trusted proxy the client is the right-most hop it did not add itself.
        for n in range(5):
            forwarded = {"X-Forwarded-For": f"203.0.113.99, 198.51.100.{n}"}
            assert (await proxy.get("/v1/modes", headers={**_random_key(n), **forwarded})).status_code == 401
        spent = {"X-Forwarded-For": "198.51.100.1"}
        assert (await proxy.get("/v1/modes", headers={**_random_key(0), **spent})).status_code == 401
        for _ in range(4):
            await proxy.get("/v1/modes", headers={**_random_key(0), **spent})
        assert (await proxy.get("/v1/modes", headers={**_random_key(0), **spent})).status_code == 429
        fresh = {"X-Forwarded-For": "198.51.100.200"}
        assert (await proxy.get("/v1/modes", headers={**_random_key(0), **fresh})).status_code == 401


async def test_failed_sign_ins_on_the_ops_page_count_too(guarded_app: FastAPI) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with _from(guarded_app, "192.0.2.11") as client:
        statuses = [
            (await client.post("/ui/login", content=f"key=guess-{n}", headers=form)).status_code
            for n in range(7)
        ]
        assert statuses == [401] * 5 + [429] * 2
        limited = await client.post("/ui/login", content="key=guess", headers=form)
        assert 1 <= int(limited.headers["retry-after"]) <= 100
        signed_in = await client.post("/ui/login", content=f"key={ADMIN_KEY}", headers=form)
        assert signed_in.status_code == 303
