"""The typed client's queue calls, sync and async, against the real service."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.client import ApiError, AsyncClient, Client
from tests.conftest import ADMIN_KEY


async def test_the_async_client_walks_a_ticket_through_the_queue(api: AsyncClient) -> None:
    mode = (await api.put_mode("cq-async", quality_start=0.0, quality_floor=0.0)).name
    first = await api.create_ticket(mode, {"players": ["cq-1"], "latencies": {"eu": 20}})
    batch = await api.create_tickets(mode, [{"players": ["cq-2"]}, {"players": ["cq-1"]}])
    assert [t.status for t in batch.tickets] == ["queued", "rejected"]
    assert (await api.get_player_ticket(mode, "cq-1")).ticket_id == first.ticket_id
    waited = asyncio.create_task(api.get_ticket(mode, first.ticket_id, wait=30))
    await asyncio.sleep(0.3)
    made = await api.matchmake(mode)  # no body: the defaults
    assert len(made.matches) == 1
    assert made.matches[0].region == "eu"
    matched = await asyncio.wait_for(waited, 10)
    assert matched.status == "matched"
    assert matched.match is not None and matched.match.proposal_id == made.matches[0].proposal_id
    other = batch.tickets[0].ticket_id
    assert other is not None
    requeued = await api.requeue_proposal(mode, made.matches[0].proposal_id, cancel=[other])
    assert {t.ticket_id: t.status for t in requeued.tickets} == {
        first.ticket_id: "queued",
        other: "cancelled",
    }
    with pytest.raises(ApiError) as again:
        await api.requeue_proposal(mode, made.matches[0].proposal_id)
    assert again.value.status == 409
    await api.cancel_ticket(mode, first.ticket_id)
    assert (await api.get_ticket(mode, first.ticket_id)).status == "cancelled"


def test_the_sync_client_long_polls_past_its_own_timeout(live_server: str) -> None:
    with Client(live_server, ADMIN_KEY, timeout=1.0) as api:
        api.put_mode("cq-sync")
        ticket = api.create_ticket("cq-sync", {"players": ["cq-sync-1"]})
        # Waits 1.5 s, longer than the client's 1 s timeout: the long-poll's own applies.
        waited = api.get_ticket("cq-sync", ticket.ticket_id, wait=1.5)
        assert waited.status == "queued"
        api.cancel_ticket("cq-sync", ticket.ticket_id)
        with pytest.raises(ApiError) as missing:
            api.get_player_ticket("cq-sync", "cq-sync-1")
        assert missing.value.status == 404
        body: dict[str, Any] = {"players": ["cq-sync-1"], "attributes": {"region": {"nested": 1}}}
        with pytest.raises(ApiError) as nested:
            api.create_ticket("cq-sync", body)
        assert nested.value.status == 422
        assert "flat" in nested.value.problem["detail"]


async def test_the_async_client_carries_roles_avoid_lists_and_shapes(api: AsyncClient) -> None:
    roles = {"tank": 1, "healer": 1, "damage": 3}
    mode = await api.put_mode("cq-roles", team_size=5, roles=roles, quality_start=0.0, quality_floor=0.0)
    assert (mode.roles, mode.team_size_min) == (roles, 5)
    accepted = {f"cr-{i}": ["tank"] if i < 2 else ["healer"] if i < 4 else ["damage"] for i in range(10)}
    await api.create_tickets(
        mode.name,
        [{"players": [p], "roles": {p: r}, "avoid": ["cr-stranger"]} for p, r in accepted.items()],
    )
    (made,) = (await api.matchmake(mode.name, 10)).matches
    assert made.roles is not None and {p: [r] for p, r in made.roles.items()} == accepted
    split = await api.balance_lobby({"mode": mode.name, "players": list(accepted), "roles": accepted})
    assert split.roles == {p: r[0] for p, r in accepted.items()}


def test_the_sync_client_carries_roles_and_avoid_lists(live_server: str) -> None:
    with Client(live_server, ADMIN_KEY) as api:
        api.put_mode("cq-roles-sync", team_size=2, roles={"tank": 1, "damage": 1})
        created = api.create_ticket(
            "cq-roles-sync",
            {"players": ["crs-1", "crs-2"], "roles": {"crs-1": ["tank"], "crs-2": ["damage"]}},
        )
        assert created.status == "queued"
        with pytest.raises(ApiError) as unknown:
            api.create_ticket("cq-roles-sync", {"players": ["crs-3"], "roles": {"crs-3": ["bard"]}})
        assert unknown.value.status == 422
        assert unknown.value.problem["errors"][0]["loc"] == ["body", "roles", "crs-3"]


async def test_the_async_client_answers_a_ready_check(api: AsyncClient) -> None:
    mode = (await api.put_mode("cq-ready", quality_start=0.0, quality_floor=0.0, accept_timeout_s=60)).name
    assert (await api.get_mode(mode)).accept_timeout_s == 60
    await api.create_tickets(mode, [{"players": ["cq-r1"]}, {"players": ["cq-r2"]}])
    (proposal,) = (await api.matchmake(mode)).matches
    assert proposal.state == "pending" and proposal.deadline is not None
    half = await api.accept_proposal(mode, proposal.proposal_id, ["cq-r1"])
    assert (half.state, half.answers) == ("pending", {"cq-r1": "accepted", "cq-r2": None})
    assert (await api.decline_proposal(mode, proposal.proposal_id, ["cq-r2"])).state == "failed"
    read = await api.get_proposal(mode, proposal.proposal_id)
    assert read.answers == {"cq-r1": "accepted", "cq-r2": "declined"}
    with pytest.raises(ApiError) as changed:
        await api.accept_proposal(mode, proposal.proposal_id, ["cq-r2"])
    assert changed.value.status == 409


def test_the_sync_client_answers_a_ready_check(live_server: str) -> None:
    with Client(live_server, ADMIN_KEY) as api:
        api.put_mode("cq-ready-sync", quality_start=0.0, quality_floor=0.0, accept_timeout_s=60)
        api.create_tickets("cq-ready-sync", [{"players": ["cq-s1"]}, {"players": ["cq-s2"]}])
        (proposal,) = api.matchmake("cq-ready-sync").matches
        assert (
            api.accept_proposal("cq-ready-sync", proposal.proposal_id, ["cq-s1", "cq-s2"]).state == "accepted"
        )
        assert api.get_proposal("cq-ready-sync", proposal.proposal_id).state == "accepted"


async def test_the_async_client_reads_queue_statistics(api: AsyncClient) -> None:
    mode = (await api.put_mode("cq-stats", quality_start=0.0, quality_floor=0.0)).name
    await api.create_tickets(mode, [{"players": [f"cq-st{n}"], "latencies": {"eu": 10}} for n in range(3)])
    assert len((await api.matchmake(mode)).matches) == 1
    stats = await api.queue_statistics(mode)
    assert (stats.tickets, stats.players) == (1, 1)
    assert [(r.region, r.tickets) for r in stats.regions] == [("eu", 1)]
    assert [w.matches for w in stats.windows] == [1, 1, 1]
