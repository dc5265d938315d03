"""POST /v1/matches, the busiest route, is answered by a request handler of its own
(app.api.matches.MatchPostRoute) inside the app's middleware and exception handlers: every
kind of request gets FastAPI's answer (status, headers, problem+json), the request is counted,
logged and given its id, and a middleware added to the app runs for it."""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.api.middleware import REQUESTS
from app.auth import service as auth
from app.config import Settings
from app.main import create_app
from tests.conftest import ADMIN_KEY

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
JSON = {"Content-Type": "application/json"}
PLAYED = "2026-03-04T05:06:07Z"


def _match(prefix: str, mode: str, ranks: tuple[float, float] = (1, 2)) -> dict[str, Any]:
    return {
        "match_id": f"{prefix}-m",
        "mode": mode,
        "played_at": PLAYED,
        "teams": [
            {"players": [{"id": f"{prefix}-a"}, {"id": f"{prefix}-b"}], "rank": ranks[0]},
            {"players": [{"id": f"{prefix}-c"}, {"id": f"{prefix}-d"}], "rank": ranks[1]},
        ],
    }


def _body(value: Any) -> bytes:
    return json.dumps(value).encode()


# (name, headers beyond the admin key, body from (prefix, mode), whether the stack answers it)
Case = tuple[str, dict[str, str], Callable[[str, str], bytes | list[bytes]], bool]
CASES: list[Case] = [
    ("created", JSON, lambda p, m: _body(_match(p, m)), False),
    ("retried", JSON, lambda p, m: _body(_match(p, m)), False),
    (
        "retried with the id echoed",
        {**JSON, "X-Request-ID": "given-1"},
        lambda p, m: _body(_match(p, m)),
        False,
    ),
    ("conflict", JSON, lambda p, m: _body(_match(p, m, (2, 1))), False),
    ("unknown mode", JSON, lambda p, m: _body(_match(p + "x", m + "-none")), False),
    ("no key", {**JSON, "Authorization": ""}, lambda p, m: _body(_match(p + "k", m)), False),
    ("unknown key", {**JSON, "Authorization": "Bearer nope"}, lambda p, m: _body(_match(p + "k", m)), False),
    ("not bearer", {**JSON, "Authorization": f"Basic {ADMIN_KEY}"}, lambda p, m: _body(_match(p, m)), False),
    ("missing teams", JSON, lambda p, m: _body({"match_id": f"{p}-t", "mode": m}), False),
    ("a list", JSON, lambda p, m: _body([_match(p, m)]), False),
    ("a string", JSON, lambda p, m: b'"match"', False),
    ("bad match id", JSON, lambda p, m: _body({**_match(p, m), "match_id": "has space"}), False),
    ("rank and score", JSON, lambda p, m: _body(_mixed(p, m)), False),
    ("coefficients in a plain mode", JSON, lambda p, m: _body(_coefficient(p, m)), False),
    ("a tie where draws are off", JSON, lambda p, m: _body(_match(p + "tie", m, (1, 1))), False),
    ("empty", JSON, lambda p, m: b"", True),
    ("whitespace", JSON, lambda p, m: b"  \n", True),
    ("not JSON", JSON, lambda p, m: b'{"match_id": ', True),
    ("NaN", JSON, lambda p, m: b'{"match_id": NaN}', True),
    ("not UTF-8", JSON, lambda p, m: b'{"match_id": "\xff"}', True),
    ("text/plain", {"Content-Type": "text/plain"}, lambda p, m: _body(_match(p + "tp", m)), True),
    ("no media type", {}, lambda p, m: _body(_match(p + "nm", m)), True),
    (
        "with a charset",
        {"Content-Type": "application/json; charset=utf-8"},
        lambda p, m: _body(_match(p + "cs", m)),
        True,
    ),
    (
        "a +json media type",
        {"Content-Type": "application/vnd.x+json"},
        lambda p, m: _body(_match(p + "pj", m)),
        True,
    ),
    ("over the limit", JSON, lambda p, m: _body({"match_id": "big", "pad": "x" * 1_100_000}), True),
    (
        "streamed, over the limit",
        JSON,
        lambda p, m: [b"[" + b'"x",' * 100_000, b'"x",' * 200_000 + b'"x"]'],
        True,
    ),
    ("streamed", JSON, lambda p, m: [_body(_match(p + "st", m))[:20], _body(_match(p + "st", m))[20:]], True),
]


def _mixed(prefix: str, mode: str) -> dict[str, Any]:
    body = _match(prefix + "mx", mode)
    body["teams"][1] = {"players": body["teams"][1]["players"], "score": 3}
    return body


def _coefficient(prefix: str, mode: str) -> dict[str, Any]:
    body = _match(prefix + "co", mode)
    body["teams"][0]["players"][0]["coefficient"] = 0.5
    return body


@pytest.fixture
async def mode_without_draws(client: httpx.AsyncClient) -> str:
    name = f"m-{secrets.token_hex(4)}"
    created = await client.put(f"/v1/modes/{name}", json={"draw_probability": 0}, headers=ADMIN)
    assert created.status_code in (200, 201), created.text
    return name


async def _send(client: httpx.AsyncClient, case: Case, prefix: str, mode: str) -> httpx.Response:
    _, headers, body, _ = case
    content = body(prefix, mode)
    if isinstance(content, list):  # sent in chunks, with no declared length

        async def chunks() -> AsyncIterator[bytes]:
            for chunk in content:
                yield chunk

        return await client.post("/v1/matches", content=chunks(), headers={**ADMIN, **headers})
    return await client.post("/v1/matches", content=content, headers={**ADMIN, **headers})


def _seen(response: httpx.Response, prefix: str) -> tuple[Any, ...]:
    """What the client sees, with the run's prefix (the same length in both runs) taken out."""
    headers = {k: v for k, v in response.headers.items() if k != "x-request-id"}
    return (
        response.status_code,
        headers,
        response.text.replace(prefix, "PREFIX"),
        _id_kind(response.headers.get("x-request-id", "")),
    )


def _id_kind(rid: str) -> str:
    """A request id as given (echoed) or what kind of new one it is."""
    if rid.startswith("given"):
        return rid
    return "new" if len(rid) == 32 and int(rid, 16) >= 0 else f"unexpected {rid!r}"


async def test_every_kind_of_request_gets_its_answer(app: FastAPI, mode_without_draws: str) -> None:
    prefix = secrets.token_hex(4)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        seen = {case[0]: await _send(http, case, prefix, mode_without_draws) for case in CASES}
    assert {name: response.status_code for name, response in seen.items()} == {
        "created": 201,
        "retried": 200,
        "retried with the id echoed": 200,
        "conflict": 409,
        "unknown mode": 404,
        "no key": 401,
        "unknown key": 401,
        "not bearer": 401,
        "missing teams": 422,
        "a list": 422,
        "a string": 422,
        "bad match id": 422,
        "rank and score": 422,
        "coefficients in a plain mode": 422,
        "a tie where draws are off": 422,
        "empty": 422,
        "whitespace": 422,
        "not JSON": 400,
        "NaN": 400,
        "not UTF-8": 400,
        "text/plain": 415,
        "no media type": 415,
        "with a charset": 201,
        "a +json media type": 201,
        "over the limit": 413,
        "streamed, over the limit": 413,
        "streamed": 201,
    }
    for name, response in seen.items():
        media = "application/json" if response.status_code < 400 else "application/problem+json"
        assert response.headers["content-type"] == media, name
        assert _id_kind(response.headers["x-request-id"]) == ("given-1" if "echoed" in name else "new"), name
        if response.status_code >= 400:
            problem = response.json()
            assert (problem["status"], problem["instance"]) == (response.status_code, "/v1/matches"), name
    assert seen["retried"].content == seen["created"].content.replace(b'"created":true', b'"created":false')
    # Validation errors as FastAPI locates them: under "body", one entry per error.
    errors = {
        name: seen[name].json()["errors"] for name in ("missing teams", "a list", "empty", "whitespace")
    }
    assert errors == {
        "missing teams": [{"loc": ["body", "teams"], "msg": "Field required", "type": "missing"}],
        "a list": [
            {
                "loc": ["body"],
                "msg": "Input should be a valid dictionary or object to extract fields from",
                "type": "model_attributes_type",
            }
        ],
        "empty": [{"loc": ["body"], "msg": "Field required", "type": "missing"}],
        "whitespace": [{"loc": ["body", 3], "msg": "JSON decode error", "type": "json_invalid"}],
    }
    assert seen["a tie where draws are off"].json()["errors"][0]["loc"] == ["body", "teams"]
    assert seen["conflict"].json()["detail"].endswith("was already recorded with a different body")


async def test_a_middleware_added_to_the_app_runs_for_match_posts(settings: Settings, mode: str) -> None:
    """Whatever is added around the app wraps this route as every other: a pure ASGI
    middleware sees the post and its answer, an error answer too."""
    application = create_app(settings)
    seen: list[tuple[str, int]] = []

    class Witness:
        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            async def sent(message: Any) -> None:
                if message["type"] == "http.response.start":
                    seen.append((scope["path"], message["status"]))
                    message["headers"] = [*message["headers"], (b"x-witness", b"1")]
                await send(message)

            await self.app(scope, receive, sent)

    application.add_middleware(Witness)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            posted = await http.post(
                "/v1/matches", content=_body(_match("witness", mode)), headers={**ADMIN, **JSON}
            )
            refused = await http.post("/v1/matches", content=b'"match"', headers={**ADMIN, **JSON})
            unauthorised = await http.post("/v1/matches", content=_body(_match("w2", mode)), headers=JSON)
    assert [posted.status_code, refused.status_code, unauthorised.status_code] == [201, 422, 401]
    assert all(r.headers["x-witness"] == "1" for r in (posted, refused, unauthorised))
    assert seen == [("/v1/matches", 201), ("/v1/matches", 422), ("/v1/matches", 401)]


async def test_a_key_without_the_scope_is_403(app: FastAPI, mode: str) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        created = await http.post("/v1/keys", json={"name": "reader", "scopes": ["read"]}, headers=ADMIN)
        reader = {"Authorization": f"Bearer {created.json()['key']}", **JSON}
        refused = await http.post("/v1/matches", content=_body(_match("r403", mode)), headers=reader)
    assert refused.status_code == 403
    assert refused.headers["content-type"] == "application/problem+json"
    assert "results:write" in refused.json()["detail"]


@pytest.fixture
async def limited(settings: Settings) -> AsyncIterator[FastAPI]:
    """An app on the test database whose key may send one request, then waits ~1000 s."""
    application = create_app(settings.model_copy(update={"rate_limit_per_s": 0.001, "rate_limit_burst": 1}))
    async with application.router.lifespan_context(application):
        yield application


async def test_over_the_rate_is_429(limited: FastAPI, mode: str) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=limited), base_url="http://test") as http:
        first = await http.post(
            "/v1/matches", content=_body(_match("r-429", mode)), headers={**ADMIN, **JSON}
        )
        assert first.status_code == 201, first.text
        over = await http.post("/v1/matches", content=_body(_match("r-4x", mode)), headers={**ADMIN, **JSON})
    assert over.status_code == 429
    assert int(over.headers["retry-after"]) >= 1
    assert over.json()["detail"] == "this key is over its request rate; retry after the given seconds"


@pytest.fixture
async def exhausted(settings: Settings) -> AsyncIterator[FastAPI]:
    """The service with every pooled connection taken: a request that needs one waits 0.3 s,
    then gets 503."""
    tiny = settings.model_copy(update={"db_pool_size": 1, "db_statement_timeout_ms": 300})
    application = create_app(tiny)
    async with application.router.lifespan_context(application):
        engine = application.state.resources.engine
        held = [await engine.connect() for _ in range(2)]  # the pool and its overflow
        try:
            yield application
        finally:
            for connection in held:
                await connection.close()


async def test_no_database_connection_is_503(exhausted: FastAPI) -> None:
    auth._known.clear()  # the key must be looked up, on a pooled connection
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=exhausted), base_url="http://test"
    ) as http:
        down = await http.post(
            "/v1/matches", content=_body(_match("down", "default")), headers={**ADMIN, **JSON}
        )
    assert down.status_code == 503, down.text
    assert down.headers["retry-after"]
    assert down.headers["content-type"] == "application/problem+json"


async def test_an_answered_post_is_counted_and_logged_with_its_id(
    app: FastAPI, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    counted = REQUESTS.labels("POST", "/v1/matches", "201")
    before = counted._value.get()
    transport = httpx.ASGITransport(app=app)
    with caplog.at_level(logging.INFO, logger="app.access"):
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            posted = await http.post(
                "/v1/matches",
                content=_body(_match("logged", mode)),
                headers={**ADMIN, **JSON, "X-Request-ID": "r-77"},
            )
    assert posted.status_code == 201
    assert posted.headers["x-request-id"] == "r-77"
    assert counted._value.get() == before + 1
    [line] = [r for r in caplog.records if r.name == "app.access"]
    assert (line.method, line.path, line.status) == ("POST", "/v1/matches", 201)  # type: ignore[attr-defined]
