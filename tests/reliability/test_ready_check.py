"""The ready check across two service processes on one Redis: answers given on one instance wake
long-polls on the other, and a proposal whose forming instance was killed (SIGKILL) still fails
at its deadline, swept by the instance left, with no client call."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.reliability.process import ADMIN, Service

pytestmark = pytest.mark.reliability


def test_answers_and_deadlines_reach_every_instance_even_after_a_kill(
    service_url: str, redis_url: str
) -> None:
    mode = f"ready-{int(time.time() * 1000) % 10**9}"
    former, survivor = Service(service_url, redis_url).start(), Service(service_url, redis_url).start()
    try:
        with httpx.Client(headers=ADMIN, timeout=40) as http:
            settings = {"quality_start": 0.0, "quality_floor": 0.0, "accept_timeout_s": 3}
            assert http.put(f"{former.base}/v1/modes/{mode}", json=settings).status_code == 200
            tickets = {}
            for n in range(4):
                made = http.post(f"{former.base}/v1/queues/{mode}/tickets", json={"players": [f"rc{n}"]})
                assert made.status_code == 201, made.text
                tickets[f"rc{n}"] = made.json()["ticket_id"]
            proposals = http.post(
                f"{former.base}/v1/queues/{mode}/matchmake", json={"max_matches": 2}
            ).json()["matches"]
            assert [p["state"] for p in proposals] == ["pending", "pending"]
            first, second = proposals

            def poll(ticket: str) -> dict[str, object]:
                answer = http.get(f"{survivor.base}/v1/queues/{mode}/tickets/{ticket}?wait=30")
                assert answer.status_code == 200, answer.text
                return answer.json()  # type: ignore[no-any-return]

            with ThreadPoolExecutor(4) as polls:
                # The first proposal is accepted on the forming instance: polls on the other wake.
                woken = [polls.submit(poll, t) for t in first["ticket_ids"]]
                time.sleep(0.5)
                players = [p for team in first["teams"] for p in team]
                accepted = http.post(
                    f"{former.base}/v1/queues/{mode}/proposals/{first['proposal_id']}/accept",
                    json={"players": players},
                )
                assert accepted.json()["state"] == "accepted"
                for answer in (w.result() for w in woken):
                    assert answer["status"] == "matched"
                    assert answer["match"]["state"] == "accepted"  # type: ignore[index]

                # The second: one player accepts, then the forming instance dies. The survivor's
                # sweep fails it at the deadline; its polls wake with the outcome.
                yes = second["teams"][0][0]
                assert (
                    http.post(
                        f"{survivor.base}/v1/queues/{mode}/proposals/{second['proposal_id']}/accept",
                        json={"players": [yes]},
                    ).json()["state"]
                    == "pending"
                )
                former.kill()
                woken = [polls.submit(poll, t) for t in second["ticket_ids"]]
                outcome = {answer["ticket_id"]: answer["status"] for answer in (w.result() for w in woken)}
            assert outcome == {
                t: "queued" if t == tickets[yes] else "cancelled" for t in second["ticket_ids"]
            }
            read = http.get(f"{survivor.base}/v1/queues/{mode}/proposals/{second['proposal_id']}").json()
            assert read["state"] == "failed"
    finally:
        former.stop()
        survivor.stop()
