"""The ready check on real Redis: proposals pending until every player accepts, failing on a
decline or at the deadline (with no client call), tickets requeued or cancelled in one step."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from redis.asyncio import Redis

from app.queues.store import NewTicket, ProposalClaim, QueueStore, TicketState, new_ids
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
    answered = time.time()
    pid = proposal["proposal_id"]
    assert proposal["state"] == "pending"
    deadline = proposal["deadline"]
    # accept_timeout_s from the moment the call claimed it, between its request and its answer.
    assert started + 60 - 0.01 <= _seconds(deadline) <= answered + 60 + 0.01
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


async def poll(http: httpx.AsyncClient, mode: str, ticket: str, seen: str | None = None) -> dict[str, Any]:
    """A long-poll of the ticket, as a task's result; it waits up to 30 s, so a test bounding it
    by 10 s sees a poll that waited for no change fail."""
    query = "?wait=30" if seen is None else f"?wait=30&seen={seen}"
    response = await asyncio.wait_for(http.get(f"/v1/queues/{mode}/tickets/{ticket}{query}"), 10)
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def where(ticket: dict[str, Any]) -> str:
    """Where a poll's answer leaves the ticket, as `seen` says it (docs/api.md)."""
    match = ticket["match"]
    return match["proposal_id"] if match is not None and match["state"] == "pending" else ticket["status"]


async def test_a_long_poll_wakes_on_each_change_of_a_ready_checks_ticket(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, accept_timeout_s=60, **OPEN)
    mine = await enqueue(client, mode, "wk-me")
    other = await enqueue(client, mode, "wk-1")
    # queued -> pending
    woken = asyncio.create_task(poll(client, mode, mine, "queued"))
    (first,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert where(await woken) == first["proposal_id"]
    assert (await answer(client, mode, first["proposal_id"], "accept", "wk-me")).status_code == 200
    # pending -> failed: put back in the queue
    woken = asyncio.create_task(poll(client, mode, mine, first["proposal_id"]))
    await asyncio.sleep(0.2)
    assert (await answer(client, mode, first["proposal_id"], "decline", "wk-1")).status_code == 200
    back = await woken
    assert (back["status"], back["match"]) == ("queued", None)
    assert (await client.get(f"/v1/queues/{mode}/tickets/{other}")).json()["status"] == "cancelled"
    # queued -> pending again, in a new proposal
    await enqueue(client, mode, "wk-2")
    woken = asyncio.create_task(poll(client, mode, mine, "queued"))
    (second,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert where(await woken) == second["proposal_id"] != first["proposal_id"]
    # pending -> accepted
    assert (await answer(client, mode, second["proposal_id"], "accept", "wk-me")).status_code == 200
    woken = asyncio.create_task(poll(client, mode, mine, second["proposal_id"]))
    await asyncio.sleep(0.2)
    assert (await answer(client, mode, second["proposal_id"], "accept", "wk-2")).json()["state"] == "accepted"
    done = await woken
    assert (done["status"], done["match"]["proposal_id"], done["match"]["state"]) == (
        "matched",
        second["proposal_id"],
        "accepted",
    )
    # Settled: any poll answers at once, whatever it says it saw.
    assert where(await poll(client, mode, mine, second["proposal_id"])) == "matched"


async def test_a_ticket_put_back_and_matched_again_between_two_polls_answers_the_next_at_once(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    """Issue 38's pitfall: the client saw its ticket in a pending proposal and accepted; before
    its next poll, another player declined, the ticket went back and the lobby matched it
    again. A poll that took the new proposal for where it started would wait out that
    proposal's deadline, unanswered; told what the client saw, it answers at once."""
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, accept_timeout_s=60, **OPEN)
    mine = await enqueue(client, mode, "rm-me")
    await enqueue(client, mode, "rm-1")
    (first,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert (await answer(client, mode, first["proposal_id"], "accept", "rm-me")).status_code == 200
    assert (await answer(client, mode, first["proposal_id"], "decline", "rm-1")).status_code == 200
    await enqueue(client, mode, "rm-2")
    (second,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert mine in second["ticket_ids"]
    seen = await poll(client, mode, mine, first["proposal_id"])
    assert (seen["status"], seen["match"]["proposal_id"], seen["match"]["state"]) == (
        "matched",
        second["proposal_id"],
        "pending",
    )
    # And told the client saw it queued (the answer of a poll that woke on the failure).
    assert where(await poll(client, mode, mine, "queued")) == second["proposal_id"]
    # Told the client saw the new proposal, it waits for news of it, as any poll does.
    waiting = asyncio.create_task(poll(client, mode, mine, second["proposal_id"]))
    await asyncio.sleep(0.2)
    assert not waiting.done()
    assert (await answer(client, mode, second["proposal_id"], "decline", "rm-2")).status_code == 200
    assert where(await waiting) == "cancelled"  # it had not accepted the new proposal yet


async def test_a_poll_woken_by_a_failure_then_polling_from_its_answer_never_misses_the_next_proposal(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    """The lobby's next matchmaking races the poll that a decline woke: it answers the ticket
    queued again, or already in its next proposal; polling on from that answer finds the new
    proposal at once either way."""
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, accept_timeout_s=60, **OPEN)
    mine = await enqueue(client, mode, "rc-me")
    await enqueue(client, mode, "rc-1")
    (first,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    await enqueue(client, mode, "rc-2")
    assert (await answer(client, mode, first["proposal_id"], "accept", "rc-me")).status_code == 200
    woken = asyncio.create_task(poll(client, mode, mine, first["proposal_id"]))
    await asyncio.sleep(0.2)
    assert (await answer(client, mode, first["proposal_id"], "decline", "rc-1")).status_code == 200
    (second,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    answered = await woken
    assert where(answered) in ("queued", second["proposal_id"])
    latest = answered if where(answered) != "queued" else await poll(client, mode, mine, "queued")
    assert where(latest) == second["proposal_id"]


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


class Interleaved(Redis):
    """A client on the real Redis that lets another caller's step fall between two of its
    commands: armed with a step, it runs that step once, just before its second command from
    then on (what a busy server may do to any read made of several commands)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step: Callable[[], Awaitable[object]] | None = None
        self.commands = 0

    def arm(self, step: Callable[[], Awaitable[object]]) -> None:
        self.step, self.commands = step, 0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.commands += 1
        if self.commands == 2 and self.step is not None:
            step, self.step = self.step, None
            await step()
        return await super().execute_command(*args, **options)


async def test_a_ticket_a_decline_puts_back_while_it_is_read_reads_queued_never_unknown(
    redis_url: str,
) -> None:
    """The live simulator's 404: a ticket whose proposal failed (the other player declined)
    went back to the pool between a reader's read of the pool and of its status, and read as
    no ticket at all; or read as matched in a failed proposal once its status came before the
    failure and its proposal after."""
    redis = Redis.from_url(redis_url)
    reader = Interleaved.from_url(redis_url)
    try:
        mode = f"torn-{new_ids(1, time.time())[0][8:16]}"
        store, reading = QueueStore(redis, mode), QueueStore(reader, mode)
        now = time.time()
        tickets = [NewTicket(i, [f"tr-{n}"], [(25.0, 8.0)], "{}") for n, i in enumerate(new_ids(2, now))]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0]
        stays, leaves = (t.ticket_id for t in tickets)
        ids = [stays, leaves]
        waiting = await store.waiting(now, 60.0)
        ((_, proposal),) = await store.claim(
            waiting, [ProposalClaim([[0], [1]], 0.5, 0.0)], now, 60.0, render_pending, deadline=now + 30.0
        )
        assert await store.settle(proposal, ids, "accepted", ["tr-0"], now, 60.0) is not None
        matched = await reading.ticket(stays, now)  # (also loads the reader's scripts)
        assert matched is not None and matched.status == "matched"

        async def decline() -> None:
            settled = await store.settle(proposal, ids, "declined", ["tr-1"], now, 60.0)
            assert settled is not None and settled.state == "failed"

        reader.arm(decline)
        state = await reading.ticket(stays, now)
        assert reader.step is None  # the decline did fall inside the read
        assert state is not None and (state.status, state.match) == ("queued", None)
        assert (await store.ticket(leaves, now)).status == "cancelled"  # type: ignore[union-attr]
        # A long-poll's wake-up reads statuses, then their proposals: a status read before the
        # failure (as written here) with its proposal read after it reads as no news yet.
        await redis.hset(store.keys.done(stays), stays, f"matched {proposal}")
        assert await store.finished([stays, leaves]) == [None, TicketState("cancelled", None)]
    finally:
        await reader.aclose()
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
