"""The queue as a lobby service uses it, on real Redis: long-polls, the player's ticket, requeue."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import httpx

from app.queues.schemas import TicketOut
from tests.queues.helpers import make_mode

OPEN = {"quality_start": 0.0, "quality_floor": 0.0}


async def enqueue(http: httpx.AsyncClient, mode: str, *players: str, **body: Any) -> str:
    response = await http.post(f"/v1/queues/{mode}/tickets", json={"players": list(players), **body})
    assert response.status_code == 201, response.text
    ticket_id: str = response.json()["ticket_id"]
    return ticket_id


async def test_a_long_poll_is_woken_by_a_match_made_in_another_process(
    client: httpx.AsyncClient, admin_headers: dict[str, str], live_server: str
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    tickets = [await enqueue(client, mode, f"lp-{i}") for i in range(6)]
    # Six polls on this process; the match is made by the live server, another process.
    polls = [asyncio.create_task(client.get(f"/v1/queues/{mode}/tickets/{t}?wait=30")) for t in tickets]
    await asyncio.sleep(0.5)
    assert not any(poll.done() for poll in polls)
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=live_server, headers=admin_headers, timeout=30) as remote:
        made = (await remote.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert len(made) == 3
    answers = await asyncio.wait_for(asyncio.gather(*polls), 10)
    # Woken by the match, long before the 30 s wait ran out.
    assert time.monotonic() - started < 10
    by_ticket = {p["ticket_id"]: p["match"]["proposal_id"] for a in answers for p in [a.json()]}
    assert {t: by_ticket[t] for t in tickets} == {t: m["proposal_id"] for m in made for t in m["ticket_ids"]}
    assert all(a.json()["status"] == "matched" for a in answers)
    # Written directly from what Redis holds: still the documented shape, with the match whole.
    for answer in answers:
        ticket = TicketOut.model_validate_json(answer.content)
        assert ticket.match is not None
        assert ticket.match.model_dump() == next(
            m for m in made if m["proposal_id"] == ticket.match.proposal_id
        )


async def test_a_long_poll_answers_queued_when_the_wait_runs_out_and_at_once_when_finished(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers)
    ticket = await enqueue(client, mode, "lp-alone")
    started = time.monotonic()
    waited = await client.get(f"/v1/queues/{mode}/tickets/{ticket}?wait=0.6")
    assert waited.status_code == 200
    assert waited.json()["status"] == "queued"
    assert time.monotonic() - started >= 0.6
    # A cancel wakes a poll too.
    poll = asyncio.create_task(client.get(f"/v1/queues/{mode}/tickets/{ticket}?wait=30"))
    await asyncio.sleep(0.3)
    await client.delete(f"/v1/queues/{mode}/tickets/{ticket}")
    assert (await asyncio.wait_for(poll, 10)).json()["status"] == "cancelled"
    # Not queued any more: no wait at all.
    started = time.monotonic()
    again = await client.get(f"/v1/queues/{mode}/tickets/{ticket}?wait=30")
    assert again.json()["status"] == "cancelled"
    assert time.monotonic() - started < 5
    missing = await client.get(f"/v1/queues/{mode}/tickets/{'0' * 32}?wait=1")
    assert missing.status_code == 404


async def test_the_players_ticket_across_statuses(
    client: httpx.AsyncClient, admin_headers: dict[str, str], api: Any
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)

    async def lookup(player: str) -> httpx.Response:
        return await client.get(f"/v1/queues/{mode}/players/{player}/ticket")

    assert (await lookup("pt-never")).status_code == 404
    party = await enqueue(client, mode, "pt-1", "pt-2")
    queued = (await lookup("pt-2")).json()
    assert queued == {"ticket_id": party, "status": "queued", "match": None, "estimated_wait_s": None}
    # Cancelled: not active.
    await client.delete(f"/v1/queues/{mode}/tickets/{party}")
    assert (await lookup("pt-1")).status_code == 404
    # Matched in a proposal that stands: active, with the proposal.
    party = await enqueue(client, mode, "pt-1", "pt-2")
    other = await enqueue(client, mode, "pt-3", "pt-4")
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    matched = (await lookup("pt-1")).json()
    assert (matched["ticket_id"], matched["status"]) == (party, "matched")
    assert matched["match"]["proposal_id"] == proposal["proposal_id"]
    # Requeued with pt-3's ticket cancelled: pt-1 is queued again, pt-3 holds nothing.
    requeued = await client.post(
        f"/v1/queues/{mode}/proposals/{proposal['proposal_id']}/requeue",
        json={"cancel": [other]},
        headers=admin_headers,
    )
    assert requeued.status_code == 200, requeued.text
    back = (await lookup("pt-1")).json()
    assert (back["ticket_id"], back["status"], back["match"]) == (party, "queued", None)
    assert (await lookup("pt-3")).status_code == 404
    # Matched, then queued again: the new ticket.
    fresh = await enqueue(client, mode, "pt-3", "pt-4")
    (second,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert sorted(second["ticket_ids"]) == sorted([party, fresh])
    newest = await enqueue(client, mode, "pt-1")
    assert (await lookup("pt-1")).json()["ticket_id"] == newest
    assert (await lookup("pt-2")).json()["ticket_id"] == party
    # Expired: not active.
    short = await make_mode(client, admin_headers, ticket_ttl_seconds=1)
    await enqueue(client, short, "pt-5")
    await asyncio.sleep(1.1)
    assert (await client.get(f"/v1/queues/{short}/players/pt-5/ticket")).status_code == 404


async def test_requeue_keeps_the_original_wait_and_answers_409_the_second_time(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    first = await enqueue(client, mode, "rq-1")
    second = await enqueue(client, mode, "rq-2")
    await asyncio.sleep(1.0)
    (proposal,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    url = f"/v1/queues/{mode}/proposals/{proposal['proposal_id']}/requeue"
    done = await client.post(url, json={"cancel": [second]})
    assert done.json() == {
        "proposal_id": proposal["proposal_id"],
        "tickets": [
            {"ticket_id": t, "status": "queued" if t == first else "cancelled"}
            for t in proposal["ticket_ids"]
        ],
    }
    assert (await client.post(url, json={})).status_code == 409
    status = (await client.get(f"/v1/queues/{mode}/tickets/{second}")).json()
    assert status["status"] == "cancelled"
    # rq-1 waits on from its first enqueue: matched with a newcomer, its wait counts from then.
    await enqueue(client, mode, "rq-3")
    (again,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert first in again["ticket_ids"]
    assert again["longest_wait_s"] >= 1.0
    # A proposal id the queue never made, or a ticket not in the proposal.
    assert (await client.post(f"/v1/queues/{mode}/proposals/{'0' * 32}/requeue")).status_code == 404
    url = f"/v1/queues/{mode}/proposals/{again['proposal_id']}/requeue"
    stranger = await client.post(url, json={"cancel": [second]})
    assert stranger.status_code == 422
    assert "not in proposal" in stranger.json()["detail"]
    # A player who queued again since the match: the old ticket is cancelled, not queued twice.
    newer = await enqueue(client, mode, "rq-3")
    outcome = (await client.post(url)).json()["tickets"]
    assert {t["ticket_id"]: t["status"] for t in outcome} == {
        t: "queued" if t == first else "cancelled" for t in again["ticket_ids"]
    }
    player = (await client.get(f"/v1/queues/{mode}/players/rq-3/ticket")).json()
    assert player["ticket_id"] == newer


async def test_requeues_racing_a_matchmaker_never_put_a_ticket_in_two_live_proposals(
    client: httpx.AsyncClient, admin_headers: dict[str, str], live_server: str
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    rng = random.Random(25)
    batch = {"tickets": [{"players": [f"race-{i}"]} for i in range(600)]}
    created = (await client.post(f"/v1/queues/{mode}/tickets/batch", json=batch)).json()
    enqueued_at = time.time()
    every = {t["ticket_id"] for t in created["tickets"]}
    live: dict[str, set[str]] = {}  # proposal -> its tickets, while it stands
    cancelled: set[str] = set()
    async with httpx.AsyncClient(base_url=live_server, headers=admin_headers, timeout=60) as remote:

        async def matchmaker() -> None:
            for _ in range(30):
                made = (await remote.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 40})).json()
                for proposal in made["matches"]:
                    live[proposal["proposal_id"]] = set(proposal["ticket_ids"])
                await asyncio.sleep(0.01)

        async def requeuer() -> None:
            for _ in range(60):
                if live:
                    proposal_id = rng.choice(sorted(live))
                    tickets = live.pop(proposal_id)
                    cancel = [t for t in sorted(tickets) if rng.random() < 0.3]
                    response = await client.post(
                        f"/v1/queues/{mode}/proposals/{proposal_id}/requeue",
                        json={"cancel": cancel},
                        headers=admin_headers,
                    )
                    assert response.status_code == 200, response.text
                    for ticket in response.json()["tickets"]:
                        assert ticket["status"] == (
                            "cancelled" if ticket["ticket_id"] in cancel else "queued"
                        )
                    cancelled.update(cancel)
                await asyncio.sleep(0.005)

        await asyncio.gather(matchmaker(), matchmaker(), requeuer())
    # Every ticket is in at most one standing proposal, and its status says which.
    standing = [t for tickets in live.values() for t in tickets]
    assert len(standing) == len(set(standing))
    assert not cancelled & set(standing)
    statuses = {}
    for ticket in every:
        statuses[ticket] = (await client.get(f"/v1/queues/{mode}/tickets/{ticket}")).json()
    for proposal_id, tickets in live.items():
        for ticket in tickets:
            assert statuses[ticket]["status"] == "matched"
            assert statuses[ticket]["match"]["proposal_id"] == proposal_id
    # None lost: the rest are queued, or cancelled as asked.
    rest = every - set(standing)
    assert {t for t in rest if statuses[t]["status"] == "cancelled"} == cancelled
    still = {t for t in rest if statuses[t]["status"] == "queued"}
    assert still == rest - cancelled
    stats = (await client.get(f"/v1/queues/{mode}")).json()
    assert stats["tickets"] == len(still)
    # Requeued tickets kept their original wait.
    assert stats["oldest_wait_s"] >= time.time() - enqueued_at - 1.0 or not still


async def test_latency_pools_form_matches_only_within_the_limit(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, max_latency_ms=50, **OPEN)
    rng = random.Random(7)
    regions = ["eu-west", "us-east", "asia"]
    tickets = [
        {"players": [f"lat-{i}"], "latencies": {r: round(rng.uniform(5, 120)) for r in regions}}
        for i in range(200)
    ]
    created = (await client.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets})).json()[
        "tickets"
    ]
    latency = {c["ticket_id"]: t["latencies"] for c, t in zip(created, tickets, strict=True)}
    made = (await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 1000})).json()["matches"]
    assert len(made) >= 50
    for proposal in made:
        assert proposal["region"] in regions
        assert all(latency[t][proposal["region"]] <= 50 for t in proposal["ticket_ids"])
    # The rule is the mode's: removing it lets the rest match anywhere.
    await client.put(f"/v1/modes/{mode}", json={"max_latency_ms": None})
    mode_out = (await client.get(f"/v1/modes/{mode}")).json()
    assert mode_out["max_latency_ms"] is None


async def test_bad_input_names_the_field(client: httpx.AsyncClient, admin_headers: dict[str, str]) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers)
    url = f"/v1/queues/{mode}/tickets"

    async def refused(body: dict[str, Any]) -> str:
        response = await client.post(url, json=body)
        assert response.status_code == 422, response.text
        detail: str = response.json()["detail"]
        return detail

    assert "latencies" in await refused({"players": ["bad-1"], "latencies": {"eu": -1}})
    assert "latencies" in await refused({"players": ["bad-1"], "latencies": {f"r{i}": 1 for i in range(33)}})
    nested = await refused({"players": ["bad-1"], "attributes": {"region": {"name": "eu"}}})
    assert "attributes" in nested and "flat" in nested
    assert "flat" in await refused({"players": ["bad-1"], "attributes": {"tags": ["a"]}})
    # Unknown region names are data, and flat scalars of every kind are attributes.
    body = {"players": ["ok-1"], "latencies": {"moon-base-1": 0, "x": 1.5}, "attributes": {"a": 1, "b": True}}
    assert (await client.post(url, json=body)).status_code == 201
    ticket = (await client.get(f"/v1/queues/{mode}/players/ok-1/ticket")).json()
    waited = await client.get(f"/v1/queues/{mode}/tickets/{ticket['ticket_id']}?wait=61")
    assert waited.status_code == 422
    assert "wait" in waited.json()["detail"]
    relaxed = await client.put(f"/v1/modes/{mode}", json={"max_latency_ms": 80, "max_latency_relaxed_ms": 40})
    assert relaxed.status_code == 422
    assert "max_latency_relaxed_ms" in relaxed.json()["detail"]
