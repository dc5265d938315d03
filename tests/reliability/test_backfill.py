"""Backfills across two service processes on one Redis: a backfill made on one instance is filled
by matchmaking calls on both at once, never twice, and a long-poll on one instance answers when
the other fills it."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.reliability.process import ADMIN, Service

pytestmark = pytest.mark.reliability


def test_two_instances_fill_each_slot_once_and_wake_each_others_polls(
    service_url: str, redis_url: str
) -> None:
    mode = f"backfill-{int(time.time() * 1000) % 10**9}"
    first, second = Service(service_url, redis_url).start(), Service(service_url, redis_url).start()
    try:
        with httpx.Client(headers=ADMIN, timeout=40) as http:
            settings = {"quality_start": 0.0, "quality_floor": 0.0, "team_size": 3}
            assert http.put(f"{first.base}/v1/modes/{mode}", json=settings).status_code == 200
            made = http.post(
                f"{first.base}/v1/queues/{mode}/backfills", json={"teams": [["g-a1", "g-a2"], ["g-b1"]]}
            )
            assert made.status_code == 201, made.text
            backfill_id = made.json()["backfill_id"]
            for n in range(9):
                queued = http.post(f"{second.base}/v1/queues/{mode}/tickets", json={"players": [f"g{n}"]})
                assert queued.status_code == 201, queued.text

            def poll() -> dict[str, object]:
                answer = http.get(f"{second.base}/v1/queues/{mode}/backfills/{backfill_id}?wait=30")
                assert answer.status_code == 200, answer.text
                return answer.json()  # type: ignore[no-any-return]

            def matchmake(base: str) -> list[dict[str, object]]:
                answer = http.post(f"{base}/v1/queues/{mode}/matchmake", json={"max_matches": 1})
                assert answer.status_code == 200, answer.text
                return answer.json()["matches"]  # type: ignore[no-any-return]

            with ThreadPoolExecutor(5) as calls:
                woken = calls.submit(poll)
                time.sleep(0.5)
                made_by = [calls.submit(matchmake, base) for base in (first.base, second.base) * 2]
                proposals = [p for call in made_by for p in call.result()]
                answered = woken.result()
            fills = [p for p in proposals if p["kind"] == "backfill"]
            assert [p["backfill_id"] for p in fills] == [backfill_id]
            tickets = [t for p in proposals for t in p["ticket_ids"]]  # type: ignore[attr-defined]
            assert len(tickets) == len(set(tickets))
            assert answered["version"] == 2
            assert answered["teams"] == fills[0]["teams"]
            assert answered["open_slots"] == [0, 0]
    finally:
        first.stop()
        second.stop()
