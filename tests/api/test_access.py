"""The access matrix: every operation x {no key, wrong key, revoked key, each scope}.

The table below is API.md's, written out by hand, so a route that checks the wrong scope
fails here. Keys never reach the logs, and key hashes are compared in constant time.
"""

from __future__ import annotations

import hmac
import logging
import re

import httpx
import pytest
from fastapi import FastAPI

from app.auth import keys

NEEDS = {
    "create_key": "admin",
    "list_keys": "admin",
    "revoke_key": "admin",
    "list_modes": "read",
    "get_mode": "read",
    "get_tier_counts": "read",
    "put_mode": "admin",
    "post_match": "results:write",
    "post_matches_batch": "results:write",
    "get_match": "read",
    "void_match": "admin",
    "get_player": "read",
    "get_player_matches": "read",
    "get_learning_curve": "read",
    "put_player_rating": "admin",
    "delete_player": "admin",
    "evaluate_lobby": "matchmaking",
    "balance_lobby": "matchmaking",
    "create_ticket": "matchmaking",
    "create_tickets": "matchmaking",
    "get_ticket": "matchmaking",
    "get_player_ticket": "matchmaking",
    "requeue_proposal": "matchmaking",
    "cancel_ticket": "matchmaking",
    "matchmake": "matchmaking",
    "queue_stats": "matchmaking",
    "queue_statistics": "matchmaking",
    "get_proposal": "matchmaking",
    "accept_proposal": "matchmaking",
    "decline_proposal": "matchmaking",
    "create_backfill": "matchmaking",
    "get_backfill": "matchmaking",
    "replace_backfill": "matchmaking",
    "delete_backfill": "matchmaking",
    "get_leaderboard": "read",
    "get_leaderboard_standing": "read",
    "submit_job": "admin",
    "start_season": "admin",
    "get_job": "read",
    "retry_job": "admin",
}
OPEN = {"healthz", "readyz", "metrics"}
SCOPES = ("read", "results:write", "matchmaking", "admin")
Headers = dict[str, str]


def operations(app: FastAPI) -> list[tuple[str, str, str]]:
    found = []
    for path, item in app.openapi()["paths"].items():
        for method, op in item.items():
            found.append((op["operationId"], method.upper(), re.sub(r"\{[^}]+\}", "zz-access", path)))
    return found


async def key_with(client: httpx.AsyncClient, admin: Headers, scopes: list[str]) -> tuple[str, str]:
    created = await client.post("/v1/keys", json={"name": "matrix", "scopes": scopes}, headers=admin)
    assert created.status_code == 201
    body = created.json()
    return body["id"], body["key"]


async def test_every_operation_lets_through_exactly_its_scopes(
    app: FastAPI, client: httpx.AsyncClient, admin_headers: Headers
) -> None:
    ops = operations(app)
    assert {op for op, _, _ in ops} == set(NEEDS) | OPEN, "classify every new operation in NEEDS"
    credentials: dict[str, str | None] = {"none": None, "wrong": "ssk_0123456789abcdef_not-a-real-key"}
    revoked_id, credentials["revoked"] = await key_with(client, admin_headers, ["admin"])
    assert (await client.delete(f"/v1/keys/{revoked_id}", headers=admin_headers)).status_code == 204
    for scope in SCOPES:
        credentials[scope] = (await key_with(client, admin_headers, [scope]))[1]

    checked = 0
    for op, method, path in ops:
        if op in OPEN:
            continue
        for name, key in credentials.items():
            headers = {} if key is None else {"Authorization": f"Bearer {key}"}
            status = (await client.request(method, path, json={}, headers=headers)).status_code
            if name in ("none", "wrong", "revoked"):
                assert status == 401, (op, name, status)
            elif name in (NEEDS[op], "admin"):
                assert status not in (401, 403), (op, name, status)
            else:
                assert status == 403, (op, name, status)
            checked += 1
    assert checked == len(NEEDS) * len(credentials)


async def test_keys_never_reach_the_logs(
    client: httpx.AsyncClient, admin_headers: Headers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key_id, key = await key_with(client, admin_headers, ["read"])
    await client.get("/v1/modes", headers={"Authorization": f"Bearer {key}"})
    await client.get("/v1/modes", headers={"Authorization": f"Bearer {key}x"})
    await client.post(
        "/ui/login", content=f"key={key}", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    await client.delete(f"/v1/keys/{key_id}", headers=admin_headers)
    secrets = (key, admin_headers["Authorization"].split()[1])
    assert caplog.records, "the requests were not logged at all"
    for record in caplog.records:
        text = record.getMessage() + " " + " ".join(str(v) for v in record.__dict__.values())
        assert not any(secret in text for secret in secrets), record.getMessage()


async def test_key_hashes_are_compared_in_constant_time(
    client: httpx.AsyncClient, admin_headers: Headers, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, key = await key_with(client, admin_headers, ["read"])
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys.hmac, "compare_digest", spy)
    ok = await client.get("/v1/modes", headers={"Authorization": f"Bearer {key}"})
    forged = await client.get("/v1/modes", headers={"Authorization": f"Bearer {key[:-1]}x"})
    assert ok.status_code == 200 and forged.status_code == 401
    # Both the good and the forged key (same id, wrong secret) went through compare_digest,
    # on hashes of equal length, so the time taken says nothing about where they differ.
    assert len(calls) == 2 and all(len(a) == len(b) for a, b in calls)
