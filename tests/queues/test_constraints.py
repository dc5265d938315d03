"""Roles, avoid lists and match sizes through HTTP, on real Redis: what a lobby service sends,
what it gets back, and every 422 naming its field."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import httpx
import pytest
from redis.asyncio import Redis

from app.queues import extension
from app.queues.store import QueueStore
from tests.queues.helpers import make_mode

OPEN = {"quality_start": 0.0, "quality_floor": 0.0}
ROLES = {"tank": 1, "healer": 1, "damage": 3}


async def batch(client: httpx.AsyncClient, mode: str, tickets: list[dict[str, Any]]) -> list[str]:
    response = await client.post(f"/v1/queues/{mode}/tickets/batch", json={"tickets": tickets})
    assert response.status_code == 200, response.text
    outcomes = response.json()["tickets"]
    assert all(o["status"] == "queued" for o in outcomes), outcomes
    return [o["ticket_id"] for o in outcomes]


async def matchmake(client: httpx.AsyncClient, mode: str, most: int = 1000) -> list[dict[str, Any]]:
    response = await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": most})
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["matches"]
    return found


async def test_a_roles_mode_forms_role_valid_proposals_that_name_each_role(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=5, roles=ROLES, **OPEN)
    shown = (await client.get(f"/v1/modes/{mode}")).json()
    assert (shown["roles"], shown["team_size_min"], shown["teams_min"]) == (ROLES, 5, 2)
    rng = random.Random(3)
    accepted: dict[str, list[str]] = {}
    tickets = []
    for i in range(200):
        roles = [r for r, p in (("tank", 0.2), ("healer", 0.15)) if rng.random() < p] + ["damage"]
        if i % 10 == 0:
            players = [f"rp{i}", f"rp{i}b"]
            accepted[players[1]] = ["healer"] if i % 20 else ["damage"]
        else:
            players = [f"rp{i}"]
        accepted[players[0]] = roles
        tickets.append({"players": players, "roles": {p: accepted[p] for p in players}})
    await batch(client, mode, tickets)
    made = await matchmake(client, mode)
    assert len(made) >= 10
    party_of = {t["players"][1]: t["players"][0] for t in tickets if len(t["players"]) == 2}
    for proposal in made:
        assert set(proposal["roles"]) == {p for team in proposal["teams"] for p in team}
        for team in proposal["teams"]:
            assert sorted(proposal["roles"][p] for p in team) == [
                "damage",
                "damage",
                "damage",
                "healer",
                "tank",
            ]
            for player in team:
                assert proposal["roles"][player] in accepted[player]
                if player in party_of:
                    assert party_of[player] in team
        # The ticket's status shows the same proposal, roles included.
        ticket = (await client.get(f"/v1/queues/{mode}/tickets/{proposal['ticket_ids'][0]}")).json()
        assert ticket["match"]["roles"] == proposal["roles"]
    claimed = [t for p in made for t in p["ticket_ids"]]
    assert len(claimed) == len(set(claimed))


async def test_no_proposal_puts_players_who_avoid_each_other_together(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)
    # Equal ratings: without the lists, any four would do. Each odd player avoids the one before.
    tickets = [{"players": [f"av{i}"], "avoid": [f"av{i - 1}"] if i % 2 else []} for i in range(40)]
    await batch(client, mode, tickets)
    made = await matchmake(client, mode)
    assert len(made) == 10
    for proposal in made:
        present = {p for team in proposal["teams"] for p in team}
        for player in present:
            number = int(player[2:])
            assert not (number % 2 and f"av{number - 1}" in present)


async def test_a_match_shrinks_to_the_size_its_wait_accepts_in_real_time(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, teams=8, teams_min=4, relax_seconds=4.0, **OPEN)
    await batch(client, mode, [{"players": [f"sz{i}"]} for i in range(5)])
    assert await matchmake(client, mode) == []  # five of eight: not yet
    await asyncio.sleep(1.0)  # until 3 s it accepts 8 − ⌊4·waited/4⌋ ≥ 6 players: still not five
    assert await matchmake(client, mode) == []
    await asyncio.sleep(3.3)
    (made,) = await matchmake(client, mode)
    assert len(made["teams"]) == 5 and made["roles"] is None


async def test_erasing_a_player_takes_them_out_of_every_avoid_list(
    client: httpx.AsyncClient, admin_headers: dict[str, str], redis_url: str
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, **OPEN)
    first, second = await batch(
        client,
        mode,
        [
            {"players": ["er-a"], "avoid": ["er-target", "er-other"]},
            {"players": ["er-b"], "avoid": ["er-target"]},
        ],
    )
    assert (await client.delete("/v1/players/er-target")).status_code == 204
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, mode)
        kept = [await redis.hget(store.keys.done(t), extension.field(t)) for t in (first, second)]
    finally:
        await redis.aclose()
    assert [extension.decode(k).avoid for k in kept] == [("er-other",), ()]
    assert all(b"er-target" not in (k or b"") for k in kept)
    # Both still queued, and they may now meet.
    (made,) = await matchmake(client, mode)
    assert sorted(made["ticket_ids"]) == sorted([first, second])


@pytest.mark.parametrize(
    ("ticket", "field", "words"),
    [
        ({"players": ["b1"], "roles": {"b1": ["bard"]}}, ["body", "roles", "b1"], "unknown role"),
        ({"players": ["b1", "b2"], "roles": {"b1": ["tank"]}}, ["body", "roles"], "lists no role"),
        (
            {"players": ["b1"], "roles": {"b1": ["tank"], "b9": ["tank"]}},
            ["body", "roles", "b9"],
            "not a player",
        ),
        (
            {"players": ["b1", "b2"], "roles": {"b1": ["tank"], "b2": ["tank"]}},
            ["body", "roles"],
            "cannot fill",
        ),
        ({"players": ["b1"], "roles": {"b1": ["tank"]}, "avoid": ["b1"]}, ["body", "avoid", 0], "own player"),
        ({"players": [f"b{i}" for i in range(6)]}, ["body", "players"], "does not fit"),
        ({"players": ["b1"], "roles": {"b1": []}}, ["body", "roles"], "1 to 16"),
    ],
)
async def test_tickets_a_roles_mode_can_never_match_are_422s_naming_the_field(
    client: httpx.AsyncClient,
    admin_headers: dict[str, str],
    ticket: dict[str, Any],
    field: list[Any],
    words: str,
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=5, roles=ROLES)
    response = await client.post(f"/v1/queues/{mode}/tickets", json=ticket)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert words in problem["detail"] or any(words in e["msg"] for e in problem["errors"])
    assert any(e["loc"][: len(field)] == field for e in problem["errors"]), problem
    # In a batch the same ticket is located by its position, and nothing is queued.
    response = await client.post(
        f"/v1/queues/{mode}/tickets/batch",
        json={"tickets": [{"players": ["ok1"], "roles": {"ok1": ["tank"]}}, ticket]},
    )
    assert response.status_code == 422
    assert any(e["loc"][:3] == ["body", "tickets", 1] for e in response.json()["errors"])
    assert (await client.get(f"/v1/queues/{mode}")).json()["tickets"] == 0


async def test_roles_on_a_mode_without_them_and_long_avoid_lists_are_422s(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers)
    response = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["n1"], "roles": {"n1": ["tank"]}}
    )
    assert response.status_code == 422 and response.json()["errors"][0]["loc"] == ["body", "roles"]
    response = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["n1"], "avoid": [f"x{i}" for i in range(101)]}
    )
    assert response.status_code == 422 and response.json()["errors"][0]["loc"] == ["body", "avoid"]
    party = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["n1"], "avoid": [f"x{i}" for i in range(100)]}
    )
    assert party.status_code == 201
