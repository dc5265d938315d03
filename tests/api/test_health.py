from __future__ import annotations

import httpx

PROBLEM = "application/problem+json"


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_when_both_servers_answer(client: httpx.AsyncClient) -> None:
    response = await client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["postgres"] == "ok"
    assert response.json()["redis"] == "ok"


async def test_metrics_are_prometheus_text_with_route_latency(client: httpx.AsyncClient) -> None:
    await client.get("/healthz")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert 'http_request_duration_seconds_bucket{le="0.001",method="GET",route="/healthz"' in response.text


async def test_unknown_route_is_problem_json(client: httpx.AsyncClient) -> None:
    response = await client.get("/no/such/route")
    assert response.status_code == 404
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["status"] == 404
    assert body["instance"] == "/no/such/route"
    assert set(body) >= {"type", "title", "status", "detail", "instance"}


async def test_wrong_method_is_problem_json(client: httpx.AsyncClient) -> None:
    response = await client.delete("/healthz")
    assert response.status_code == 405
    assert response.headers["content-type"] == PROBLEM


async def test_validation_error_names_the_field(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    response = await client.post("/v1/keys", json={"name": "x", "scopes": ["nope"]}, headers=admin_headers)
    assert response.status_code == 422
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["errors"][0]["loc"] == ["body", "scopes", 0]
    assert "scopes" in body["detail"]


async def test_malformed_json_is_400_problem(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/keys", content=b"{not json", headers={**admin_headers, "content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == PROBLEM
    assert response.json()["detail"].startswith("the body is not valid JSON: Expecting property name")


async def test_request_id_is_echoed_or_generated(client: httpx.AsyncClient) -> None:
    echoed = await client.get("/healthz", headers={"X-Request-ID": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    generated = await client.get("/healthz")
    assert len(generated.headers["x-request-id"]) == 32
    hostile = await client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces"})
    assert hostile.headers["x-request-id"] != "bad id\twith spaces"


async def test_oversized_body_is_413_problem(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    body = b'{"name": "' + b"x" * 1_100_000 + b'", "scopes": ["read"]}'
    response = await client.post(
        "/v1/keys", content=body, headers={**admin_headers, "content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["content-type"] == PROBLEM
