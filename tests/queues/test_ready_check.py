"""The ready check on real Redis: proposals pending until every player accepts, failing on a
decline or at the deadline (with no client call), tickets requeued or cancelled in one step."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from typing import Any

import httpx
from redis.asyncio import Redis

from app.queues.store import NewTicket, ProposalClaim, QueueStore, new_ids
from tests.queues.helpers import make_mode, render_pending

OPEN = {"quality_start": 0.0, "quality_floor": 0.0}


async def enqueue(http: httpx.AsyncClient, mode: str, *players: str) -> str:
    response = await http.post(f"/v1/queues/{mode}/tickets", json={"players": list(players)})
    assert response.status_code == 201, response.text
    ticket_id: str = response.json()["ticket_id"]
    return ticket_id


async def answer(
    http: httpx.AsyncClient, mode: str, proposal: str, verb: str, *players: str
) -> httpx.Response:
    return await http.post(f"/v1/queues/{mode}/proposals/{proposal}/{verb}", json={"players": list(players)})


async def test_accept_timeout_s_is_off_by_default_bounded_and_clearable(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers)
    assert (await client.get(f"/v1/modes/{mode}")).json()["accept_timeout_s"] is None
    for bad in (0, 0.5, 301, "soon"):
        refused = await client.put(f"/v1/modes/{mode}", json={"accept_timeout_s": bad})
        assert refused.status_code == 422, bad
        assert refused.json()["errors"][0]["loc"] == ["body", "accept_timeout_s"]
    assert (await client.put(f"/v1/modes/{mode}", json={"accept_timeout_s": 20})).json()[
        "accept_timeout_s"
    ] == 20
    assert (await client.put(f"/v1/modes/{mode}", json={"team_size": 1})).json()["accept_timeout_s"] == 20
    assert (await client.put(f"/v1/modes/{mode}", json={"accept_timeout_s": None})).json()[
        "accept_timeout_s"
    ] is None


async def test_without_a_ready_check_a_proposal_is_accepted_at_once(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    await enqueue(client, mode, "off-1")
    await enqueue(client, mode, "off-2")
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert (proposal["state"], proposal["deadline"]) == ("accepted", None)
    read = (await client.get(f"/v1/queues/{mode}/proposals/{proposal['proposal_id']}")).json()
    assert read["answers"] == {"off-1": None, "off-2": None}
    assert {k: v for k, v in read.items() if k != "answers"} == proposal
    assert (await answer(client, mode, proposal["proposal_id"], "accept", "off-1")).status_code == 200
    declined = await answer(client, mode, proposal["proposal_id"], "decline", "off-1")
    assert declined.status_code == 409
    assert "accepted" in declined.json()["detail"]
    # Matched and accepted: the player may queue again.
    await enqueue(client, mode, "off-1")


async def test_everyone_accepts_and_answers_are_idempotent(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, accept_timeout_s=60, **OPEN)
    party = await enqueue(client, mode, "ac-1", "ac-2")
    await enqueue(client, mode, "ac-3", "ac-4")
    started = time.time()
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    pid = proposal["proposal_id"]
    assert proposal["state"] == "pending"
    deadline = proposal["deadline"]
    assert 55 <= _seconds(deadline) - started <= 65
    ticket = (await client.get(f"/v1/queues/{mode}/tickets/{party}")).json()
    assert (ticket["status"], ticket["match"]["state"]) == ("matched", "pending")
    # In a pending proposal: no second ticket, and the refusal names the proposal.
    again = await client.post(f"/v1/queues/{mode}/tickets", json={"players": ["ac-2"]})
    assert again.status_code == 409 and pid in again.json()["detail"]
    batch = await client.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": [{"players": ["ac-3"]}]})
    assert batch.json()["tickets"][0]["status"] == "rejected" and pid in batch.json()["tickets"][0]["detail"]
    # Bad answers: each its own 4xx.
    stranger = await answer(client, mode, pid, "accept", "ac-1", "nobody")
    assert stranger.status_code == 422
    assert stranger.json()["errors"][0]["loc"] == ["body", "players", 1]
    assert (await answer(client, mode, "0" * 32, "accept", "ac-1")).status_code == 404
    assert (await client.get(f"/v1/queues/{mode}/proposals/{'0' * 32}")).status_code == 404

    first = await answer(client, mode, pid, "accept", "ac-1", "ac-2")
    assert first.status_code == 200, first.text
    assert first.json()["state"] == "pending"
    assert first.json()["answers"] == {"ac-1": "accepted", "ac-2": "accepted", "ac-3": None, "ac-4": None}
    assert (await answer(client, mode, pid, "accept", "ac-1")).json()["state"] == "pending"
    last = await answer(client, mode, pid, "accept", "ac-3", "ac-4")
    assert last.json()["state"] == "accepted"
    assert (await client.get(f"/v1/queues/{mode}/tickets/{party}")).json()["match"]["state"] == "accepted"
    # Settled: the same answer again is 200, a changed one 409.
    assert (await answer(client, mode, pid, "accept", "ac-4")).status_code == 200
    changed = await answer(client, mode, pid, "decline", "ac-4")
    assert changed.status_code == 409 and "accepted" in changed.json()["detail"]
    # Accepted: everyone may queue again.
    await enqueue(client, mode, "ac-2")


async def test_a_decline_cancels_the_decliners_and_requeues_the_others_with_their_wait(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, accept_timeout_s=60, **OPEN)
    yes = await enqueue(client, mode, "dc-yes")
    no = await enqueue(client, mode, "dc-no")
    await asyncio.sleep(1.0)
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    pid = proposal["proposal_id"]
    assert (await answer(client, mode, pid, "accept", "dc-yes")).json()["state"] == "pending"
    declined = await answer(client, mode, pid, "decline", "dc-no")
    assert declined.json()["state"] == "failed"
    assert declined.json()["answers"] == {"dc-yes": "accepted", "dc-no": "declined"}
    back = (await client.get(f"/v1/queues/{mode}/tickets/{yes}")).json()
    assert (back["ticket_id"], back["status"], back["match"]) == (yes, "queued", None)
    assert (await client.get(f"/v1/queues/{mode}/tickets/{no}")).json()["status"] == "cancelled"
    # The requeued ticket kept its enqueue time, so its wait.
    assert (await client.get(f"/v1/queues/{mode}")).json()["oldest_wait_s"] >= 1.0
    # Who may queue: the decliner at once; the other holds their requeued ticket.
    await enqueue(client, mode, "dc-no")
    held = await client.post(f"/v1/queues/{mode}/tickets", json={"players": ["dc-yes"]})
    assert held.status_code == 409 and "active ticket" in held.json()["detail"]
    # Settled: answers that repeat are 200, changed ones 409; the proposal reads failed.
    assert (await answer(client, mode, pid, "decline", "dc-no")).status_code == 200
    assert (await answer(client, mode, pid, "accept", "dc-no")).status_code == 409
    assert (await client.get(f"/v1/queues/{mode}/proposals/{pid}")).json()["state"] == "failed"
    # A requeue is refused: the failure requeued it already.
    assert (await client.post(f"/v1/queues/{mode}/proposals/{pid}/requeue", json={})).status_code == 409


async def test_the_deadline_fails_the_proposal_with_no_client_call_and_wakes_long_polls(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, accept_timeout_s=1, **OPEN)
    yes = await enqueue(client, mode, "to-yes")
    silent = await enqueue(client, mode, "to-silent")
    # A poll on a queued ticket answers when it is matched (pending)...
    poll = asyncio.create_task(client.get(f"/v1/queues/{mode}/tickets/{yes}?wait=30"))
    await asyncio.sleep(0.3)
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    woken = (await asyncio.wait_for(poll, 10)).json()
    assert (woken["status"], woken["match"]["state"]) == ("matched", "pending")
    assert (await answer(client, mode, proposal["proposal_id"], "accept", "to-yes")).status_code == 200
    # ...and a poll on a pending one when it settles: here the deadline passes, and only the
    # instances' background sweep acts (the polls read nothing meanwhile).
    polls = [asyncio.create_task(client.get(f"/v1/queues/{mode}/tickets/{t}?wait=30")) for t in (yes, silent)]
    after_yes, after_silent = [(await asyncio.wait_for(p, 20)).json() for p in polls]
    assert (after_yes["ticket_id"], after_yes["status"], after_yes["match"]) == (yes, "queued", None)
    assert after_silent["status"] == "cancelled"
    read = (await client.get(f"/v1/queues/{mode}/proposals/{proposal['proposal_id']}")).json()
    assert read["state"] == "failed"
    assert read["answers"] == {"to-yes": "accepted", "to-silent": None}
    late = await answer(client, mode, proposal["proposal_id"], "accept", "to-silent")
    assert late.status_code == 409 and "had not answered" in late.json()["detail"]


async def test_only_one_sweeper_fails_an_overdue_proposal(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"sweep-{new_ids(1, time.time())[0][8:16]}")
        now = time.time()
        tickets = [NewTicket(i, [f"sw-{n}"], [(25.0, 8.0)], "{}") for n, i in enumerate(new_ids(4, now))]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0, 0, 0]
        waiting = await store.waiting(now, 60.0)
        rows = {ticket_id: row for row, ticket_id in enumerate(waiting.pool.ids)}
        claims = [
            ProposalClaim([[rows[tickets[a].ticket_id]], [rows[tickets[b].ticket_id]]], 0.5, 0.0)
            for a, b in ((0, 1), (2, 3))
        ]
        claimed = await store.claim(waiting, claims, now, 60.0, render_pending, deadline=now + 5.0)
        assert len(claimed) == 2
        assert await store.sweep_deadlines(now + 1.0, 60.0) == 0  # not due yet
        results = await asyncio.gather(*(store.sweep_deadlines(now + 6.0, 60.0) for _ in range(6)))
        assert sum(results) == 2
        assert await redis.zcard(store.keys.deadlines) == 0
        # Nobody answered: every ticket is cancelled, none queued again, their players free.
        for ticket in tickets:
            state = await store.ticket(ticket.ticket_id, now + 6.0)
            assert state is not None and state.status == "cancelled"
        assert await redis.hlen(store.keys.pool) == 0
        assert await redis.hlen(store.keys.holders) == 0
        body = await store.proposal(claimed[0][1])
        assert body is not None and json.loads(body)["state"] == "failed"
    finally:
        await redis.aclose()


def _seconds(stamp: Any) -> float:
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def test_erasure_renames_a_player_in_a_ready_checks_answers_and_frees_their_hold(
    redis_url: str,
) -> None:
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"erase-{new_ids(1, time.time())[0][8:16]}")
        now = time.time()
        tickets = [
            NewTicket(i, [name], [(25.0, 8.0)], "{}")
            for i, name in zip(new_ids(2, now), ["eve", "bob"], strict=True)
        ]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0]
        waiting = await store.waiting(now, 60.0)
        ((_, proposal),) = await store.claim(
            waiting, [ProposalClaim([[0], [1]], 0.5, 0.0)], now, 60.0, render_pending, deadline=now + 30.0
        )
        ids = [t.ticket_id for t in tickets]
        assert (await store.settle(proposal, ids, "accepted", ["eve"], now, 60.0)).state == "pending"  # type: ignore[union-attr]
        await store.erase_player("eve", "erased:" + "2" * 32, now + 1.0, 60.0)
        assert await store.answers(proposal) == {"erased:" + "2" * 32: "accepted"}
        assert await redis.hget(store.keys.holders, "eve") is None
    finally:
        await redis.aclose()
