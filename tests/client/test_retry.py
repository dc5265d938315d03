"""The clients' retry policy against real servers: a real 429 from the per-key rate limiter,
real connection errors from a port where the service starts late or restarts. No mocks."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import email.utils
import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.client import ApiError, AsyncClient, Client, RetryPolicy
from app.client.retry import retry_after
from app.queues.schemas import QueueStats
from tests.client.recording import RecordingAsyncTransport, RecordingTransport, Sent
from tests.conftest import ADMIN_KEY
from tests.reliability.process import Service, free_port
from tests.reliability.servers import PrivateRedis

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
# Patient enough for a service that is still starting on a busy machine.
PATIENT = RetryPolicy(attempts=10_000, max_wait=120.0, backoff=0.05, max_backoff=0.25)
QUICK = RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.01)


def outcomes(sent: list[Sent], method: str, path: str) -> list[int | str]:
    return [outcome for m, p, outcome in sent if (m, p) == (method, path)]


def match_body(mode: str, match_id: str) -> dict[str, object]:
    return {
        "match_id": match_id,
        "mode": mode,
        "teams": [
            {"players": [{"id": f"{match_id}-a"}], "rank": 1},
            {"players": [{"id": f"{match_id}-b"}], "rank": 2},
        ],
    }


# --- what the policy decides (pure) ---


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.UTC)
    later = email.utils.format_datetime(now + dt.timedelta(seconds=7), usegmt=True)
    assert retry_after(httpx.Response(429, headers={"Retry-After": "3"})) == 3.0
    assert retry_after(httpx.Response(503, headers={"Retry-After": later}), now) == 7.0
    assert retry_after(httpx.Response(503, headers={"Retry-After": "soon"})) is None
    assert retry_after(httpx.Response(503)) is None


def test_the_policy_is_bounded_by_sends_and_by_total_wait() -> None:
    limited = httpx.Response(429, headers={"Retry-After": "2"})
    retries = RetryPolicy(attempts=3, max_wait=100).start()
    waits = []
    for _ in range(5):
        retries.sent += 1
        waits.append(retries.wait_before_next(False, limited))
    assert waits == [2.0, 2.0, None, None, None]  # 3 sends at most
    retries = RetryPolicy(attempts=10, max_wait=5).start()
    retries.sent = 1
    assert [retries.wait_before_next(False, limited) for _ in range(3)] == [2.0, 2.0, None]  # 4 s of 5
    lost = httpx.ConnectError("refused")
    fresh = RetryPolicy().start()
    fresh.sent = 1
    assert fresh.wait_before_next(False, lost) is None  # not safe to repeat: raise at once
    assert 0 < (fresh.wait_before_next(True, lost) or 0) <= RetryPolicy().backoff
    assert fresh.wait_before_next(True, httpx.ReadTimeout("slow")) is None  # the caller's budget
    assert fresh.wait_before_next(True, httpx.Response(500)) is None
    with pytest.raises(ValueError, match="attempts"):
        RetryPolicy(attempts=0)


# --- 429 from the real per-key rate limiter ---


@pytest.fixture(scope="module")
def limited_server(database_url: str, redis_url: str) -> Iterator[str]:
    """A live service allowing each key one request a second (burst 1)."""
    with Service(database_url, redis_url, RATE_LIMIT_PER_S="1", RATE_LIMIT_BURST="1") as service:
        yield service.base


async def spend_the_token(base: str) -> None:
    """Send until a request of the admin key is served: its bucket is then empty for a second."""
    async with httpx.AsyncClient(base_url=base, headers=ADMIN) as raw:
        while (await raw.get("/v1/modes")).status_code == 429:
            await asyncio.sleep(0.05)


def test_a_429_is_retried_after_its_retry_after(limited_server: str) -> None:
    transport = RecordingTransport()
    with Client(limited_server, ADMIN_KEY, transport=transport) as api:
        answers = [api.get_mode("default").name for _ in range(3)]
    assert answers == ["default"] * 3
    sent = outcomes(transport.sent, "GET", "/v1/modes/default")
    assert 429 in sent  # the limiter did refuse some sends ...
    assert sent.count(200) == 3 and sent[-1] == 200  # ... and every call still got its answer


async def test_a_refused_enqueue_is_sent_again_and_queues_once(limited_server: str) -> None:
    transport = RecordingAsyncTransport()
    async with AsyncClient(limited_server, ADMIN_KEY, transport=transport) as api:
        mode = f"rl-{secrets.token_hex(4)}"
        await api.put_mode(mode)
        await spend_the_token(limited_server)  # so the enqueue below is refused
        ticket = await api.create_ticket(mode, {"players": [f"{mode}-p"]})
        stats = await api.queue_stats(mode)
    # 429 is an answer before any effect, so even a call unsafe to repeat is sent again.
    assert outcomes(transport.sent, "POST", f"/v1/queues/{mode}/tickets") == [429, 201]
    assert ticket.status == "queued" and stats.tickets == 1


async def test_a_retry_after_beyond_the_budget_fails_at_once(limited_server: str) -> None:
    transport = RecordingAsyncTransport()
    async with AsyncClient(
        limited_server, ADMIN_KEY, transport=transport, retry=RetryPolicy(max_wait=0.5)
    ) as api:
        await spend_the_token(limited_server)
        with pytest.raises(ApiError) as caught:
            await api.list_modes()
    assert caught.value.status == 429 and caught.value.headers["retry-after"] == "1"
    assert caught.value.problem["title"] == "Too Many Requests"
    assert outcomes(transport.sent, "GET", "/v1/modes") == [429]  # waiting 1 s would pass 0.5 s


# --- 503 from a real outage: the service's Redis down, then back ---


async def test_a_503_is_retried_after_its_retry_after_until_the_outage_ends(
    database_url: str, tmp_path: Path
) -> None:
    redis = PrivateRedis(tmp_path)
    redis.start()
    try:
        with Service(database_url, redis.url) as service:
            mode = f"ru-{secrets.token_hex(4)}"
            transport = RecordingTransport()
            with Client(service.base, ADMIN_KEY, transport=transport) as api:
                api.put_mode(mode)
                redis.stop()

                async def restart_after_the_first_503() -> None:
                    for _ in range(600):
                        if 503 in outcomes(transport.sent, "GET", f"/v1/queues/{mode}"):
                            break
                        await asyncio.sleep(0.05)
                    await asyncio.to_thread(redis.start)

                # Both run to their end, whatever happens: no server is started after the test.
                stats, _ = await asyncio.gather(
                    asyncio.to_thread(api.queue_stats, mode),
                    restart_after_the_first_503(),
                    return_exceptions=True,
                )
        sent = outcomes(transport.sent, "GET", f"/v1/queues/{mode}")
        assert sent[0] == 503 and sent[-1] == 200 and set(sent[:-1]) == {503}
        assert isinstance(stats, QueueStats) and stats.tickets == 0
    finally:
        redis.stop()


# --- connection errors: a port with no service, one that starts late, one killed and restarted ---


async def test_connection_errors_are_retried_only_for_calls_safe_to_repeat() -> None:
    base = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    mode = "nowhere"
    calls = {
        "enqueue": lambda api: api.create_ticket(mode, {"players": ["p"]}),
        "matchmake": lambda api: api.matchmake(mode),
        "match": lambda api: api.post_match(match_body(mode, f"{mode}-1")),
        "read": lambda api: api.get_mode(mode),
    }
    sync_sent, async_sent = RecordingTransport(), RecordingAsyncTransport()
    with Client(base, ADMIN_KEY, transport=sync_sent, retry=QUICK) as api:
        for call in calls.values():
            with pytest.raises(httpx.ConnectError):
                call(api)
    async with AsyncClient(base, ADMIN_KEY, transport=async_sent, retry=QUICK) as async_api:
        for call in calls.values():
            with pytest.raises(httpx.ConnectError):
                await call(async_api)
    for transport in (sync_sent, async_sent):
        assert outcomes(transport.sent, "POST", f"/v1/queues/{mode}/tickets") == ["ConnectError"]
        assert outcomes(transport.sent, "POST", f"/v1/queues/{mode}/matchmake") == ["ConnectError"]
        # Safe to repeat, and bounded by the policy's attempts.
        assert outcomes(transport.sent, "POST", "/v1/matches") == ["ConnectError"] * 3
        assert outcomes(transport.sent, "GET", f"/v1/modes/{mode}") == ["ConnectError"] * 3


async def test_calls_wait_for_a_service_that_starts_late_or_restarts(
    database_url: str, redis_url: str
) -> None:
    service = Service(database_url, redis_url)
    mode = f"ce-{secrets.token_hex(4)}"
    sync_sent, async_sent = RecordingTransport(), RecordingAsyncTransport()
    starting: asyncio.Task[Service] | None = None
    try:
        # Started late: the first sends find nothing on the port.
        starting = asyncio.create_task(asyncio.to_thread(service.start))
        with Client(service.base, ADMIN_KEY, transport=sync_sent, retry=PATIENT) as api:
            created = await asyncio.to_thread(api.put_mode, mode)
        await starting
        starting = None
        # Killed (kill -9), then started again on the same port while a match is being posted.
        service.kill()
        starting = asyncio.create_task(asyncio.to_thread(service.start))
        async with AsyncClient(service.base, ADMIN_KEY, transport=async_sent, retry=PATIENT) as api:
            first = await api.post_match(match_body(mode, f"{mode}-1"))
            again = await api.post_match(match_body(mode, f"{mode}-1"))
            player = await api.get_player(f"{mode}-1-a")
    finally:
        if starting is not None:  # let a start under way finish, so that stop() stops it
            with contextlib.suppress(Exception):
                await starting
        service.stop()
    put = outcomes(sync_sent.sent, "PUT", f"/v1/modes/{mode}")
    assert put[0] == "ConnectError" and put[-1] == 200 and set(put[:-1]) == {"ConnectError"}
    assert created.name == mode
    posted = outcomes(async_sent.sent, "POST", "/v1/matches")
    assert posted[0] == "ConnectError" and posted[-2:] == [201, 200] and set(posted[:-2]) == {"ConnectError"}
    assert (first.created, again.created) == (True, False)
    assert [r.matches for r in player.ratings] == [1]  # applied once
