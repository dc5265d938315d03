"""Queueing tickets in batches, and a queue that checks attributes before it claims, on real Redis."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.queues.schemas import TicketBatchOut
from tests.queues.helpers import make_mode


async def test_a_batch_queues_each_ticket_on_its_own(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    mode = await make_mode(client, admin_headers, team_size=2)
    held = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["b-held"]}, headers=admin_headers
    )
    assert held.status_code == 201
    batch = await client.post(
        f"/v1/queues/{mode}/tickets/batch",
        json={
            "tickets": [
                {"players": ["b-1", "b-2"], "attributes": {"region": "eu"}},
                {"players": ["b-3", "b-held"]},
                {"players": ["b-4"]},
                {"players": ["b-2"]},  # already in the first ticket of this batch
            ]
        },
        headers=admin_headers,
    )
    assert batch.status_code == 200, batch.text
    # The body is written by hand: it must still be the documented shape.
    TicketBatchOut.model_validate_json(batch.content)
    outcomes = batch.json()["tickets"]
    assert [o["status"] for o in outcomes] == ["queued", "rejected", "queued", "rejected"]
    assert "'b-held' already holds an active ticket" in outcomes[1]["detail"]
    assert "'b-2' already holds an active ticket" in outcomes[3]["detail"]
    assert outcomes[1]["ticket_id"] is None
    for outcome in (outcomes[0], outcomes[2]):
        status = await client.get(f"/v1/queues/{mode}/tickets/{outcome['ticket_id']}", headers=admin_headers)
        assert status.json()["status"] == "queued"
    stats = (await client.get(f"/v1/queues/{mode}", headers=admin_headers)).json()
    assert (stats["tickets"], stats["players"]) == (3, 4)
    # The rejected ticket's other player holds nothing and may queue.
    assert (
        await client.post(f"/v1/queues/{mode}/tickets", json={"players": ["b-3"]}, headers=admin_headers)
    ).status_code == 201


@pytest.mark.parametrize(
    ("tickets", "where"),
    [
        ([{"players": ["x-1"]}, {"players": ["x-2", "x-3", "x-4"]}], ["body", "tickets", 1, "players"]),
        ([{"players": ["x-5", "x-5"]}], ["body", "tickets", 0, "players"]),
    ],
)
async def test_a_malformed_ticket_rejects_the_whole_batch(
    client: httpx.AsyncClient, admin_headers: dict[str, str], tickets: list[dict[str, Any]], where: list[Any]
) -> None:
    mode = await make_mode(client, admin_headers, team_size=2)
    response = await client.post(
        f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets}, headers=admin_headers
    )
    assert response.status_code == 422
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["errors"][0]["loc"] == where
    assert (await client.get(f"/v1/queues/{mode}", headers=admin_headers)).json()["tickets"] == 0


async def test_batch_limits(client: httpx.AsyncClient, admin_headers: dict[str, str]) -> None:
    mode = await make_mode(client, admin_headers)
    url = f"/v1/queues/{mode}/tickets/batch"
    assert (await client.post(url, json={"tickets": []}, headers=admin_headers)).status_code == 422
    too_many = {"tickets": [{"players": [f"lim-{i}"]} for i in range(1001)]}
    assert (await client.post(url, json=too_many, headers=admin_headers)).status_code == 422
    assert (await client.post(url, json={"tickets": [{"players": ["a"]}]})).status_code == 401
    assert (
        await client.post(
            "/v1/queues/nope-mode/tickets/batch",
            json={"tickets": [{"players": ["a"]}]},
            headers=admin_headers,
        )
    ).status_code == 404


async def test_attributes_are_checked_before_a_match_is_claimed(
    client: httpx.AsyncClient, admin_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pool records carry a 48-bit digest of the attributes; if two attribute sets shared one,
    the queue must still never match across them."""
    import app.queues.store as store

    monkeypatch.setattr(store, "attribute_group", lambda attributes: 7)
    mode = await make_mode(client, admin_headers, quality_start=0.0, quality_floor=0.0)
    url = f"/v1/queues/{mode}/tickets/batch"
    tickets = [{"players": [f"c-{i}"], "attributes": {"region": "eu" if i % 2 else "us"}} for i in range(40)]
    assert (await client.post(url, json={"tickets": tickets}, headers=admin_headers)).status_code == 200
    made = (
        await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 100}, headers=admin_headers)
    ).json()
    region = {f"c-{i}": "eu" if i % 2 else "us" for i in range(40)}
    for match in made["matches"]:
        assert len({region[p] for team in match["teams"] for p in team}) == 1
    left = (await client.get(f"/v1/queues/{mode}", headers=admin_headers)).json()["tickets"]
    assert left == 40 - 2 * len(made["matches"])
