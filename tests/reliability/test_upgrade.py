"""A rolling deploy: the previous release and this one serve one queue at once.

The previous release's own code (PREVIOUS_RELEASE, taken from this repository's history with
`git archive`) runs as one service process and this checkout as another, on the same database
and Redis, as two instances of a deploy half done. Tickets queued and proposals made by the old
instance are this release's queue; tickets this release queues are the old instance's queue;
one player never holds two tickets across them; and a ticket whose extension the old release
cannot read (an avoid list) is never matched by it. docs/upgrades.md says why this holds.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.reliability.process import ADMIN, Service

pytestmark = pytest.mark.reliability

# The release before this one: the queue's layout it wrote is the one this release reads.
PREVIOUS_RELEASE = "d3a4cab6ae6fe3d2615dd5ccf1dcfa79a71f0dd7"
ROOT = Path(__file__).resolve().parents[2]


def previous_release(into: Path) -> Path:
    """The previous release's code (the app package, its migrations) extracted into `into`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", PREVIOUS_RELEASE, "app", "migrations", "alembic.ini"],
        capture_output=True,
        check=False,
    )
    assert archive.returncode == 0, (
        f"the previous release ({PREVIOUS_RELEASE[:7]}) is not in this clone's history: "
        f"{archive.stderr.decode(errors='replace')}"
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def post(http: httpx.Client, base: str, path: str, body: object = None) -> httpx.Response:
    return http.post(f"{base}{path}", json=body, headers=ADMIN)


def test_the_previous_release_and_this_one_serve_one_queue(
    make_database: Callable[[str], str], redis_url: str, tmp_path: Path
) -> None:
    # A database of its own, in a deploy's order: the previous release runs first (its `serve`
    # migrates to its own head), then this one starts and migrates further while it serves.
    database = make_database("upgrade")
    code = previous_release(tmp_path)
    old = Service(database, redis_url, code=code).start()
    new: Service | None = None
    mode = f"up-{int(time.time() * 1000) % 10**9}"
    try:
        with httpx.Client(timeout=30) as http:
            assert http.put(f"{old.base}/v1/modes/{mode}", json={"quality_start": 0.0, "quality_floor": 0.0},
                            headers=ADMIN).status_code == 200  # fmt: skip
            # Before the deploy: six players queue on the old release, which matches two of them.
            queued = {}
            for n in range(6):
                created = post(http, old.base, f"/v1/queues/{mode}/tickets", {"players": [f"o{n}"]})
                assert created.status_code == 201, created.text
                queued[f"o{n}"] = created.json()["ticket_id"]
            (live,) = post(http, old.base, f"/v1/queues/{mode}/matchmake", {"max_matches": 1}).json()[
                "matches"
            ]
            time.sleep(1.0)  # so that requeued tickets show their original wait

            new = Service(database, redis_url).start()
            # This release reads what the old one wrote: tickets, holds and the live proposal.
            for player, ticket in queued.items():
                state = http.get(f"{new.base}/v1/queues/{mode}/tickets/{ticket}", headers=ADMIN).json()
                expected = "matched" if ticket in live["ticket_ids"] else "queued"
                assert state["status"] == expected, (player, state)
                mine = http.get(f"{new.base}/v1/queues/{mode}/players/{player}/ticket", headers=ADMIN)
                assert mine.json()["ticket_id"] == ticket
            # Nobody gets a second ticket, whichever instance they ask.
            waiting = next(p for p, t in queued.items() if t not in live["ticket_ids"])
            again = post(http, new.base, f"/v1/queues/{mode}/tickets", {"players": [waiting]})
            assert again.status_code == 409
            fresh = post(http, new.base, f"/v1/queues/{mode}/tickets", {"players": ["n0"]})
            assert fresh.status_code == 201
            assert post(http, old.base, f"/v1/queues/{mode}/tickets", {"players": ["n0"]}).status_code == 409
            # The old instance's live proposal falls through; this release puts its tickets back
            # with their original wait.
            requeued = post(http, new.base, f"/v1/queues/{mode}/proposals/{live['proposal_id']}/requeue", {})
            assert requeued.status_code == 200, requeued.text
            assert {t["status"] for t in requeued.json()["tickets"]} == {"queued"}
            # Long-polls on the old instance are woken by the matches this release makes.
            seven = [*queued.values(), fresh.json()["ticket_id"]]

            def poll(ticket: str) -> tuple[dict[str, object], float]:
                answer = http.get(f"{old.base}/v1/queues/{mode}/tickets/{ticket}?wait=20", headers=ADMIN)
                return answer.json(), time.monotonic()

            with ThreadPoolExecutor(len(seven)) as polls:
                started = time.monotonic()
                answers = [polls.submit(poll, t) for t in seven]
                time.sleep(1.0)
                made = post(http, new.base, f"/v1/queues/{mode}/matchmake", {"max_matches": 100}).json()[
                    "matches"
                ]
                assert len(made) == 3  # seven players: three pairs, one waits
                assert min(p["longest_wait_s"] for p in made) >= 1.0
                woken = [a.result() for a in answers]
            matched = {t for p in made for t in p["ticket_ids"]}
            assert sorted(str(w["status"]) for w, _ in woken) == ["matched"] * 6 + ["queued"]
            assert {w["ticket_id"] for w, _ in woken if w["status"] == "matched"} == matched
            # Woken by the match, long before their 20 s ran out.
            assert all(at - started < 12.0 for w, at in woken if w["status"] == "matched")

            # A ticket this release queues with an avoid list is one the old release cannot read
            # in full, so it never matches it; this release does.
            for body in (
                {"players": ["x0"], "avoid": ["nobody-queued"]},
                {"players": ["x1"]},
                {"players": ["x2"]},
            ):
                assert post(http, new.base, f"/v1/queues/{mode}/tickets", body).status_code == 201
            by_old = post(http, old.base, f"/v1/queues/{mode}/matchmake", {"max_matches": 100}).json()[
                "matches"
            ]
            assert len(by_old) == 1 and all("x0" not in team for p in by_old for team in p["teams"])
            (by_new,) = post(http, new.base, f"/v1/queues/{mode}/matchmake", {"max_matches": 100}).json()[
                "matches"
            ]
            assert ["x0"] in by_new["teams"]
            # The old release reads this release's proposals (it ignores what it does not know).
            state = http.get(f"{old.base}/v1/queues/{mode}/tickets/{by_new['ticket_ids'][0]}", headers=ADMIN)
            assert state.json()["match"]["proposal_id"] == by_new["proposal_id"]
            for base in (old.base, new.base):
                assert http.get(f"{base}/v1/queues/{mode}", headers=ADMIN).json()["tickets"] == 0

            # A ready check (set on this release; the old one ignores the setting): the old
            # instance reads the pending proposal, gives its players no second ticket, and sees
            # the failed check's requeue.
            ready = f"{mode}-rc"
            settings = {"quality_start": 0.0, "quality_floor": 0.0, "accept_timeout_s": 60}
            assert http.put(f"{new.base}/v1/modes/{ready}", json=settings, headers=ADMIN).status_code == 200
            waits = [
                post(http, new.base, f"/v1/queues/{ready}/tickets", {"players": [f"r{n}"]}) for n in (0, 1)
            ]
            (pending,) = post(http, new.base, f"/v1/queues/{ready}/matchmake", {}).json()["matches"]
            assert pending["state"] == "pending"
            seen = http.get(
                f"{old.base}/v1/queues/{ready}/tickets/{waits[0].json()['ticket_id']}", headers=ADMIN
            )
            assert seen.json()["match"]["proposal_id"] == pending["proposal_id"]
            assert post(http, old.base, f"/v1/queues/{ready}/tickets", {"players": ["r0"]}).status_code == 409
            url = f"/v1/queues/{ready}/proposals/{pending['proposal_id']}"
            assert post(http, new.base, f"{url}/accept", {"players": ["r0"]}).json()["state"] == "pending"
            answered = post(http, new.base, f"{url}/decline", {"players": ["r1"]})
            assert answered.json()["state"] == "failed"
            back = http.get(f"{old.base}/v1/queues/{ready}/players/r0/ticket", headers=ADMIN).json()
            assert back == {"ticket_id": waits[0].json()["ticket_id"], "status": "queued", "match": None}
            assert post(http, old.base, f"/v1/queues/{ready}/tickets", {"players": ["r1"]}).status_code == 201
    finally:
        old.stop()
        if new is not None:
            new.stop()
