"""Every operation needs a key (except health, metrics and docs); scopes gate the rest."""

from __future__ import annotations

import re

import httpx
from fastapi import FastAPI

OPEN = {"/healthz", "/readyz", "/metrics"}


def operations(app: FastAPI) -> list[tuple[str, str]]:
    found = []
    for path, item in app.openapi()["paths"].items():
        for method in item:
            found.append((method.upper(), re.sub(r"\{[^}]+\}", "x", path)))
    return found


async def test_every_operation_needs_a_key(app: FastAPI, client: httpx.AsyncClient) -> None:
    checked = 0
    for method, path in operations(app):
        if path in OPEN:
            continue
        response = await client.request(method, path, json={})
        assert response.status_code == 401, (method, path, response.status_code)
        assert response.headers["content-type"] == "application/problem+json"
        assert response.headers["www-authenticate"] == "Bearer"
        checked += 1
    assert checked >= 3


async def test_open_operations_need_no_key(client: httpx.AsyncClient) -> None:
    for path in (*OPEN, "/docs", "/openapi.json"):
        assert (await client.get(path)).status_code == 200, path


async def test_unknown_key_is_401(client: httpx.AsyncClient) -> None:
    for key in ("ssk_deadbeefdeadbeef_nope", "not-a-key-at-all-xxxxxxxx"):
        response = await client.get("/v1/keys", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 401


async def test_key_lifecycle_and_scopes(client: httpx.AsyncClient, admin_headers: dict[str, str]) -> None:
    created = await client.post("/v1/keys", json={"name": "dash", "scopes": ["read"]}, headers=admin_headers)
    assert created.status_code == 201
    key = created.json()["key"]
    reader = {"Authorization": f"Bearer {key}"}

    # A known key without the admin scope is forbidden from admin operations.
    forbidden = await client.get("/v1/keys", headers=reader)
    assert forbidden.status_code == 403
    assert "admin" in forbidden.json()["detail"]

    listed = (await client.get("/v1/keys", headers=admin_headers)).json()["keys"]
    mine = [k for k in listed if k["id"] == created.json()["id"]]
    assert mine and mine[0]["scopes"] == ["read"] and "key" not in mine[0]

    assert (await client.delete(f"/v1/keys/{created.json()['id']}", headers=admin_headers)).status_code == 204
    assert (await client.get("/v1/keys", headers=reader)).status_code == 401
    again = await client.delete(f"/v1/keys/{created.json()['id']}", headers=admin_headers)
    assert again.status_code == 404


async def test_only_the_hash_is_stored(
    app: FastAPI, client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    from sqlalchemy import text

    created = (
        await client.post("/v1/keys", json={"name": "h", "scopes": ["read"]}, headers=admin_headers)
    ).json()
    async with app.state.resources.engine.connect() as conn:
        row = (await conn.execute(text("SELECT * FROM api_keys WHERE id = :id"), {"id": created["id"]})).one()
    assert created["key"] not in [str(v) for v in row]
    import hashlib

    assert row.key_hash == hashlib.sha256(created["key"].encode()).hexdigest()
