"""Jobs over HTTP: admin submits, the read scope follows, and the 202 says where to look."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

Headers = dict[str, str]


async def test_a_202_locates_the_job_and_a_read_key_follows_it(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    created = await client.post("/v1/keys", json={"name": "ops", "scopes": ["read"]}, headers=admin_headers)
    read = {"Authorization": f"Bearer {created.json()['key']}"}
    accepted = await client.post(f"/v1/modes/{mode}/jobs", json={"kind": "replay"}, headers=admin_headers)
    assert accepted.status_code == 202
    job_id = accepted.json()["job_id"]
    assert accepted.headers["location"] == f"/v1/jobs/{job_id}"
    followed = await client.get(accepted.headers["location"], headers=read)
    assert followed.status_code == 200 and followed.json()["job_id"] == job_id
    # Submitting stays admin.
    refused = await client.post(f"/v1/modes/{mode}/jobs", json={"kind": "replay"}, headers=read)
    assert refused.status_code == 403


def test_every_202_in_the_document_declares_its_location(app: FastAPI) -> None:
    accepted = [
        (path, method, operation["responses"]["202"])
        for path, item in app.openapi()["paths"].items()
        for method, operation in item.items()
        if "202" in operation["responses"]
    ]
    assert accepted, "no 202 operation left to check"
    for path, method, response in accepted:
        assert "Location" in response.get("headers", {}), (method, path)
