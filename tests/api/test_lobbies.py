"""Lobby evaluation and balancing over HTTP, with ratings from PostgreSQL."""

from __future__ import annotations

import secrets

import httpx
import pytest

from app.client import AsyncClient
from app.rating import Rating, TrueSkill


async def test_evaluate_uses_stored_ratings_and_the_prior(
    client: httpx.AsyncClient, admin_headers: dict[str, str], api: AsyncClient, mode: str
) -> None:
    await api.set_rating("strong", mode, 40.0, 2.0)
    response = await client.post(
        "/v1/lobbies/evaluate",
        json={"mode": mode, "teams": [["strong"], ["newcomer"]]},
        headers=admin_headers,
    )
    assert response.status_code == 200
    env = TrueSkill()
    expected = env.quality([[Rating(40, 2)], [Rating()]])
    body = response.json()
    assert body["quality"] == pytest.approx(expected, rel=1e-12)
    assert sum(body["win_probabilities"]) == pytest.approx(1.0, abs=1e-9)
    assert body["win_probabilities"][0] > 0.5


async def test_balance_splits_and_keeps_parties(
    client: httpx.AsyncClient, admin_headers: dict[str, str], api: AsyncClient, mode: str
) -> None:
    for i, mu in enumerate([40, 38, 20, 22, 30, 31]):
        await api.set_rating(f"b{i}", mode, float(mu), 3.0)
    players = [f"b{i}" for i in range(6)]
    response = await client.post(
        "/v1/lobbies/balance",
        json={"mode": mode, "players": players, "teams": 2, "parties": [["b0", "b1"]]},
        headers=admin_headers,
    )
    assert response.status_code == 200
    body = response.json()
    assert body["exact"] is True
    team_of = {p: i for i, t in enumerate(body["teams"]) for p in t}
    assert team_of["b0"] == team_of["b1"]
    assert sorted(len(t) for t in body["teams"]) == [3, 3]
    # The best of every split that keeps the party together (brute force).
    env, ratings = (
        TrueSkill(),
        {f"b{i}": Rating(float(mu), 3.0) for i, mu in enumerate([40, 38, 20, 22, 30, 31])},
    )
    best = max(
        env.quality(
            [
                [ratings[p] for p in ("b0", "b1", third)],
                [ratings[p] for p in players if p not in ("b0", "b1", third)],
            ]
        )
        for third in players[2:]
    )
    assert body["quality"] == pytest.approx(best, rel=1e-12)
    assert team_of["b2"] == team_of["b0"]


@pytest.mark.parametrize(
    ("path", "body", "loc"),
    [
        ("/v1/lobbies/evaluate", {"teams": [["a"], ["a"]]}, ["body", "teams", 1]),
        ("/v1/lobbies/evaluate", {"teams": [["a"]]}, ["body", "teams"]),
        (
            "/v1/lobbies/balance",
            {"players": ["a", "b", "c", "d"], "parties": [["a", "z"]]},
            ["body", "parties", 0],
        ),
        ("/v1/lobbies/balance", {"players": ["a", "b", "c", "d"], "parties": [["a", "b", "c"]]}, ["body"]),
        ("/v1/lobbies/balance", {"players": ["a", "a"]}, ["body", "players", 1]),
    ],
)
async def test_bad_lobbies_are_422(
    client: httpx.AsyncClient,
    admin_headers: dict[str, str],
    path: str,
    body: dict[str, object],
    loc: list[object],
) -> None:
    response = await client.post(path, json=body, headers=admin_headers)
    assert response.status_code == 422
    assert loc in [e["loc"] for e in response.json()["errors"]]


async def test_lobbies_need_the_matchmaking_scope(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    created = await client.post("/v1/keys", json={"name": "dash", "scopes": ["read"]}, headers=admin_headers)
    reader = {"Authorization": f"Bearer {created.json()['key']}"}
    response = await client.post("/v1/lobbies/evaluate", json={"teams": [["a"], ["b"]]}, headers=reader)
    assert response.status_code == 403
    created = await client.post(
        "/v1/keys", json={"name": "lobby", "scopes": ["matchmaking"]}, headers=admin_headers
    )
    lobby = {"Authorization": f"Bearer {created.json()['key']}"}
    assert (
        await client.post("/v1/lobbies/evaluate", json={"teams": [["a"], ["b"]]}, headers=lobby)
    ).status_code == 200


async def test_balance_under_the_modes_roles_names_each_role(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    mode = f"lr-{secrets.token_hex(3)}"
    roles = {"tank": 1, "healer": 1, "damage": 3}
    assert (
        await client.put(f"/v1/modes/{mode}", json={"team_size": 5, "roles": roles}, headers=admin_headers)
    ).status_code == 200
    players = [f"lb{i}" for i in range(10)]
    accepted = {p: ["damage"] for p in players}
    accepted.update(
        {"lb0": ["tank"], "lb1": ["tank", "healer"], "lb2": ["healer"], "lb3": ["healer", "damage"]}
    )
    body = {"mode": mode, "players": players, "teams": 2, "roles": accepted, "parties": [["lb0", "lb4"]]}
    response = await client.post("/v1/lobbies/balance", json=body, headers=admin_headers)
    assert response.status_code == 200, response.text
    split = response.json()
    assert split["exact"] is True
    for team in split["teams"]:
        assert sorted(split["roles"][p] for p in team) == ["damage", "damage", "damage", "healer", "tank"]
        assert all(split["roles"][p] in accepted[p] for p in team)
    assert any({"lb0", "lb4"} <= set(team) for team in split["teams"])
    for change, words in (
        ({"roles": {**accepted, "lb9": ["bard"]}}, "unknown role"),
        ({"roles": {p: r for p, r in accepted.items() if p != "lb9"}}, "lists no role"),
        ({"roles": {p: ["damage"] for p in players}}, "cannot be met"),
    ):
        response = await client.post("/v1/lobbies/balance", json={**body, **change}, headers=admin_headers)
        assert response.status_code == 422, response.text
        assert words in response.json()["detail"]
    plain = await client.post(
        "/v1/lobbies/balance", json={"players": players, "teams": 2, "roles": accepted}, headers=admin_headers
    )
    assert plain.status_code == 422 and plain.json()["errors"][0]["loc"] == ["body", "roles"]
