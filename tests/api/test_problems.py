"""One title per status: every way the service answers an error spells it from app.errors.TITLES,
and writes it in one form: Problem's members, in its order, as compact JSON."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx

from app.errors import TITLES, title_of
from app.schemas import Problem

Headers = dict[str, str]


def test_titles_are_rfc_9110_names_whatever_the_python() -> None:
    # Python 3.11's HTTPStatus says "Unprocessable Entity" and "Request Entity Too Large".
    assert title_of(422) == "Unprocessable Content"
    assert title_of(413) == "Content Too Large"
    assert title_of(418) == "I'm a Teapot"  # outside the table: the standard phrase
    assert title_of(599) == "Error"


async def _streamed(size: int) -> AsyncIterator[bytes]:
    for _ in range(size // 65536 + 1):
        yield b"x" * 65536


async def test_every_error_path_titles_its_status_from_the_one_table(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    json_headers = {**admin_headers, "content-type": "application/json"}
    read_key = (
        await client.post("/v1/keys", json={"name": "titles", "scopes": ["read"]}, headers=admin_headers)
    ).json()["key"]
    answers = {
        # RequestValidationError (FastAPI's handler)
        "validation": await client.put("/v1/modes/x", json={"sigma": -1}, headers=admin_headers),
        # ValidationFailed (an AppError raised by a service)
        "service 422": await client.put(
            f"/v1/modes/{mode}", json={"quality_floor": 0.9}, headers=admin_headers
        ),
        # the body guard in the middleware
        "middleware 400": await client.put(f"/v1/modes/{mode}", content=b'{"mu": NaN}', headers=json_headers),
        # the match post's own path (app.api.match_posts)
        "match post 400": await client.post(
            "/v1/matches", content=b'{"match_id": NaN}', headers=json_headers
        ),
        "match post 422": await client.post("/v1/matches", json={"match_id": "é"}, headers=admin_headers),
        "middleware 415": await client.put(
            f"/v1/modes/{mode}", content=b"mu=1", headers={**admin_headers, "content-type": "text/plain"}
        ),
        "middleware 413": await client.put(
            f"/v1/modes/{mode}", content=b" " * (2 << 20), headers=json_headers
        ),
        # streamed past the limit: Starlette's HTTPException handler
        "streamed 413": await client.post("/ui/login", content=_streamed(2 << 20)),
        "unknown route": await client.get("/v1/nowhere", headers=admin_headers),
        "unknown method": await client.patch("/v1/modes", headers=admin_headers),
        "unknown mode": await client.get("/v1/modes/never-made-here", headers=admin_headers),
        "no key": await client.get("/v1/modes"),
        "wrong scope": await client.put(
            f"/v1/modes/{mode}", json={}, headers={"Authorization": f"Bearer {read_key}"}
        ),
    }
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "validation": 422,
        "service 422": 422,
        "middleware 400": 400,
        "match post 400": 400,
        "match post 422": 422,
        "middleware 415": 415,
        "middleware 413": 413,
        "streamed 413": 413,
        "unknown route": 404,
        "unknown method": 405,
        "unknown mode": 404,
        "no key": 401,
        "wrong scope": 403,
    }
    # A detail names what is wrong, not only the status again.
    assert answers["unknown method"].json()["detail"] == "PATCH is not allowed on /v1/modes; allowed: GET"
    for name, answer in answers.items():
        assert answer.headers["content-type"] == "application/problem+json", name
        assert answer.json()["detail"] != answer.json()["title"], name
        body = answer.json()
        assert body["status"] == answer.status_code, name
        assert body["title"] == TITLES[answer.status_code], (name, body["title"])
        # One serialisation: compact (a 400 was spaced), UTF-8, members in Problem's order.
        assert answer.content == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), name
        assert list(body) == list(Problem.model_fields)[: len(body)], name
        assert Problem.model_validate(body).instance == answer.request.url.path, name
