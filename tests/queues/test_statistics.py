"""Queue statistics and wait estimates on real Redis: what waits by region, the waits and
qualities of recent matches per window, and each queued ticket's estimate from tickets like it."""

from __future__ import annotations

import asyncio
import time

import httpx
import numpy as np
import pytest
from redis.asyncio import Redis

from app.matchmaking import waits
from app.matchmaking.pool import Pool
from app.queues.statistics import QueueStatistics, Waiting, Window
from app.queues.store import NewTicket, QueueStore, new_ids
from tests.queues.helpers import make_mode

OPEN = {"quality_start": 0.0, "quality_floor": 0.0}


async def test_statistics_of_a_fresh_queue_say_nothing_was_matched(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers)
    stats = (await client.get(f"/v1/queues/{mode}/stats")).json()
    assert (stats["tickets"], stats["players"], stats["regions"]) == (0, 0, [])
    assert [w["minutes"] for w in stats["windows"]] == [1, 5, 15]
    for window in stats["windows"]:
        assert (
            window["matches"],
            window["tickets_matched"],
            window["wait_p50_s"],
            window["quality_p50"],
        ) == (
            0,
            0,
            None,
            None,
        )
    assert (await client.get("/v1/queues/no-such-mode/stats")).status_code == 404


async def test_statistics_count_waiting_by_region_and_the_waits_and_qualities_of_matches(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    queued = [
        {"players": ["st-1"], "latencies": {"eu": 20, "us": 90}},
        {"players": ["st-2"], "latencies": {"eu": 30}},
        {"players": ["st-3"], "attributes": {"region": "asia"}},
        {"players": ["st-4"], "attributes": {"region": "asia"}},
        {"players": ["st-5"]},
    ]
    queued_at = time.time()
    for body in queued:
        assert (await client.post(f"/v1/queues/{mode}/tickets", json=body)).status_code == 201
    await asyncio.sleep(1.0)
    made = (await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 1})).json()["matches"]
    answered = time.time()
    assert len(made) == 1
    stats = (await client.get(f"/v1/queues/{mode}/stats")).json()
    waiting = {r["region"]: (r["tickets"], r["players"]) for r in stats["regions"]}
    matched = {p for team in made[0]["teams"] for p in team}
    expected: dict[str | None, tuple[int, int]] = {}
    for body in queued:
        if body["players"][0] in matched:
            continue
        region = "eu" if "latencies" in body else body.get("attributes", {}).get("region")
        tickets, players = expected.get(region, (0, 0))
        expected[region] = (tickets + 1, players + 1)
    assert waiting == expected
    assert (stats["tickets"], stats["players"]) == (3, 3)
    for window in stats["windows"]:
        assert (window["matches"], window["tickets_matched"]) == (1, 2)
        # Both tickets waited a second or more, and no longer than the test ran: within a bin
        # (10%) of those.
        assert 0.95 <= window["wait_p50_s"] <= window["wait_p99_s"] <= (answered - queued_at) * 1.1
        assert abs(window["quality_p50"] - made[0]["quality"]) <= 0.005


async def test_a_call_whose_statistics_fail_still_answers_its_claimed_matches(
    client: httpx.AsyncClient, admin_headers: dict[str, str], redis_url: str
) -> None:
    """The proposals are claimed before the call is counted: a Redis error in the counting
    (here the pulse hash's key holding a list) must not turn the answer into a 5xx, or the
    tickets would sit in proposals no lobby service ever got."""
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    redis = Redis.from_url(redis_url)
    try:
        await redis.rpush(f"mm:v4:{{{mode}}}:pulse", "not a hash")
        for player in ("sf-1", "sf-2"):
            assert (
                await client.post(f"/v1/queues/{mode}/tickets", json={"players": [player]})
            ).status_code == 201
        answer = await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 1})
        assert answer.status_code == 200, answer.text
        (made,) = answer.json()["matches"]
        assert sorted(p for team in made["teams"] for p in team) == ["sf-1", "sf-2"]
        ticket = (await client.get(f"/v1/queues/{mode}/tickets/{made['ticket_ids'][0]}")).json()
        assert ticket["status"] == "matched" and ticket["match"]["proposal_id"] == made["proposal_id"]
    finally:
        await redis.aclose()


async def test_estimates_read_the_waits_of_tickets_like_the_one_asking(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        mode = f"estimate-{new_ids(1, time.time())[0][8:16]}"
        statistics = QueueStatistics(redis, mode)
        now = time.time()
        # Skill band 0 (mean mu in [0, 10)) in eu waited 40 s, sitting through 3 calls; band 2
        # in eu 4 s, matched by the first call; nothing in us (uncertainty band 0: sigma below 5).
        waited = np.array([40.0] * 30 + [4.0] * 30)
        classes = ["0.0|eu"] * 30 + ["2.0|eu"] * 30
        await statistics.record(now, [0.5] * 30, waited, classes, [3] * 30 + [0] * 30)
        await statistics.refresh_estimates(now, beta=10.0)
        store = QueueStore(redis, mode)
        tickets = [
            NewTicket(new_ids(1, now)[0], ["low"], [(5.0, 1.0)], "{}", [("eu", 10.0)]),
            NewTicket(new_ids(1, now)[0], ["high"], [(25.0, 1.0)], "{}", [("eu", 10.0), ("us", 50.0)]),
            NewTicket(new_ids(1, now)[0], ["high-us"], [(25.0, 1.0)], "{}", [("us", 10.0)]),
            NewTicket(new_ids(1, now)[0], ["far"], [(95.0, 1.0)], "{}"),
        ]
        await store.enqueue(tickets, now, 60.0)
        values = [await redis.hget(store.keys.pool, ticket.ticket_id) for ticket in tickets]

        # No rhythm of calls yet: the median of its class's waits.
        low, high, high_us, far = [await statistics.estimate(value, 0.0, now) for value in values]
        assert low is not None and 36 <= low <= 44
        assert high is not None and 3.6 <= high <= 4.4
        assert high_us == high  # its band's waits in any region
        assert far is not None and 3.6 <= far <= 44  # the whole queue's median
        # Never below the wait so far.
        later = await statistics.estimate(values[1], 30.0, now + 30.0)
        assert later is not None and later >= 30.0

        # Calls every 2 s, the latest 0.5 s ago, claiming in 0.1 s: a ticket queued since is
        # expected at the next call's answer (1.1 s from now), plus 2 s per call its class
        # sat through.
        assert await statistics.pulse(now - 2.5, now - 2.4) == 0.0
        assert await statistics.pulse(now - 0.5, now - 0.4) == pytest.approx(2.0)
        low, high, high_us, far = [await statistics.estimate(value, 0.5, now + 0.5) for value in values]
        assert high == pytest.approx(0.5 + 1.1) and high_us == high
        assert low == pytest.approx(0.5 + 1.1 + 3 * 2.0)
        assert far == pytest.approx(0.5 + 1.1)  # the lower median of the whole queue's calls
        # A call since left them waiting: one call sat through. The low band's class sat
        # through three, two more to go; the high band's never sat through one, so its waits
        # that long are what is left to read.
        await statistics.pulse(now + 1.5, now + 1.6)
        low, high = [await statistics.estimate(value, 2.0, now + 2.0) for value in values[:2]]
        assert low == pytest.approx(2.0 + 1.6 + 2 * 2.0)
        assert high is not None and 3.6 <= high <= 4.4
    finally:
        await redis.aclose()


async def test_a_queued_tickets_status_carries_its_estimate(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    queued_at = time.time()
    first = (await client.post(f"/v1/queues/{mode}/tickets", json={"players": ["es-0"]})).json()["ticket_id"]
    assert (await client.get(f"/v1/queues/{mode}/tickets/{first}")).json()["estimated_wait_s"] is None
    for n in range(1, 4):
        await client.post(f"/v1/queues/{mode}/tickets", json={"players": [f"es-{n}"]})
    await asyncio.sleep(1.0)
    made = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    answered = time.time()
    assert len(made) == 2
    fresh = (await client.post(f"/v1/queues/{mode}/tickets", json={"players": ["es-9"]})).json()["ticket_id"]
    status = (await client.get(f"/v1/queues/{mode}/tickets/{fresh}")).json()
    # Its class's tickets waited a second or more, and no longer than the test ran (a bin: 10%).
    assert status["status"] == "queued" and 0.9 <= status["estimated_wait_s"] <= (answered - queued_at) * 1.1
    matched = (await client.get(f"/v1/queues/{mode}/tickets/{first}")).json()
    assert matched["status"] == "matched" and matched["estimated_wait_s"] is None


async def test_the_statistics_read_counts_each_window_exactly(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        mode = f"windows-{new_ids(1, time.time())[0][8:16]}"
        statistics = QueueStatistics(redis, mode)
        now = time.time()
        assert await statistics.read(now) == (None, [Window(m, 0, 0, {}, {}) for m in (1, 5, 15)])
        # Three matchmaking calls: now (two matches), 3 minutes ago (one), 10 minutes ago (one).
        await statistics.record(now, [0.9, 0.7], np.array([1.0, 1.0, 3.0, 3.0]), ["0.0|eu"] * 4, [0] * 4)
        await statistics.record(now - 180, [0.5], np.array([20.0, 20.0]), ["0.0|eu"] * 2, [9] * 2)
        await statistics.record(now - 600, [0.3], np.array([100.0, 100.0]), ["0.0|eu"] * 2, [49] * 2)
        pool = Pool(
            ["a", "b"], np.array([1, 2]), np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2, np.int64)
        )
        await statistics.count_waiting(pool, (["eu", None], np.array([0, 1])), np.ones(2, np.bool_), now)
        counted, windows = await statistics.read(now)
        assert counted == Waiting(now, {"eu": (1, 1), None: (1, 2)})
        assert [(w.minutes, w.matches, w.tickets) for w in windows] == [(1, 2, 4), (5, 3, 6), (15, 4, 8)]
        one, five, fifteen = windows
        assert sum(one.waits.values()) == 4 and sum(fifteen.qualities.values()) == 4
        assert waits.percentile(one.waits, 0.5, wait=True) == pytest.approx(1.0, rel=0.1)
        assert waits.percentile(five.waits, 0.99, wait=True) == pytest.approx(20.0, rel=0.1)
        assert waits.percentile(fifteen.waits, 0.99, wait=True) == pytest.approx(100.0, rel=0.1)
        assert waits.percentile(five.qualities, 0.1, wait=False) == pytest.approx(0.5, abs=0.005)
    finally:
        await redis.aclose()
