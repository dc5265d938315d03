"""Hostile bodies get a 4xx problem+json naming what is wrong, and change nothing."""

from __future__ import annotations

import json

import httpx
import pytest

from app.api.middleware import MAX_DEPTH, json_problem

Headers = dict[str, str]
PROBLEM = "application/problem+json"
JSON = {"content-type": "application/json"}


def match_body(mode: str, match_id: str) -> dict[str, object]:
    return {
        "match_id": match_id,
        "mode": mode,
        "teams": [{"players": [{"id": "h1"}], "rank": 0}, {"players": [{"id": "h2"}], "rank": 1}],
    }


async def assert_rejected(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    assert words in response.json()["detail"], response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        (b"[" * 100_000 + b"]" * 100_000, 400, "nested deeper than 32 levels"),
        (b'{"a":' * 40 + b"1" + b"}" * 40, 400, "nested deeper than 32 levels"),
        (b'{"mu": NaN, "sigma": 1}', 400, "NaN is not valid JSON"),
        (b'{"mu": Infinity, "sigma": 1}', 400, "Infinity is not valid JSON"),
        (b'{"mu": -Infinity, "sigma": 1}', 400, "-Infinity is not valid JSON"),
        (b'{"mu": 1e400, "sigma": 1}', 400, "out of range"),
        (b'{"mu": ' + b"9" * 5000 + b', "sigma": 1}', 400, "5000 digits is out of range"),
        (b'{"mu": 1e300, "sigma": 1}', 422, "mu"),  # finite but beyond the field's bounds
        (b'{"mu": "\xff\xfe", "sigma": 1}', 400, "not UTF-8: invalid byte at position 8"),
        (b'{"mu": 1, "sigma": 1,}', 400, "not valid JSON"),
    ],
)
async def test_bad_json_bodies_are_named(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str, body: bytes, status: int, words: str
) -> None:
    response = await client.put(
        f"/v1/players/hostile/ratings/{mode}", content=body, headers={**admin_headers, **JSON}
    )
    await assert_rejected(response, status, words)
    assert (await client.get("/v1/players/hostile", headers=admin_headers)).status_code == 404


@pytest.mark.parametrize(
    ("text", "too_deep"),
    [
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, False),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), True),
        ('{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH, False),
        ('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), True),
        # Siblings do not add up, and brackets inside strings (escaped quotes too) do not count.
        ("[" + ",".join(["[[1],{}]"] * 40) + "]", False),
        ('["' + "[" * 40 + '\\"' + "{" * 40 + '"]', False),
        ("[" * 20 + '"[[[[' + "]" * 20, False),  # never valid, but not too deep either
        ("[{" * 17 + "}]" * 17, True),
        ("[" * 40, True),  # unclosed
        ("[{]}" * 40, False),  # crossed: invalid JSON, named as such below
    ],
)
def test_depth_counts_nesting_outside_strings(text: str, too_deep: bool) -> None:
    problem = json_problem(text.encode())
    assert (problem is not None and "nested deeper" in problem) == too_deep, problem


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; b=x", "application/xml"],
)
async def test_wrong_content_types_are_415(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str, content_type: str | None
) -> None:
    headers = dict(admin_headers)
    if content_type is not None:
        headers["content-type"] = content_type
    body = json.dumps(match_body(mode, f"{mode}-ct")).encode()
    response = await client.post("/v1/matches", content=body, headers=headers)
    await assert_rejected(response, 415, "Content-Type: application/json")
    assert (await client.get(f"/v1/matches/{mode}-ct", headers=admin_headers)).status_code == 404


async def test_json_with_a_charset_or_a_json_suffix_is_accepted(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for n, content_type in enumerate(("application/json; charset=utf-8", "application/problem+json")):
        body = json.dumps(match_body(mode, f"{mode}-ok{n}")).encode()
        response = await client.post(
            "/v1/matches", content=body, headers={**admin_headers, "content-type": content_type}
        )
        assert response.status_code == 201, response.text


async def test_oversized_bodies_are_413_declared_or_streamed(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    big = b'{"pad": "' + b"x" * 2_000_000 + b'"}'
    declared = await client.post("/v1/matches", content=big, headers={**admin_headers, **JSON})
    await assert_rejected(declared, 413, "exceeds 1048576 bytes")

    async def chunks():  # type: ignore[no-untyped-def]
        for start in range(0, len(big), 65536):
            yield big[start : start + 65536]

    streamed = await client.post("/v1/matches", content=chunks(), headers={**admin_headers, **JSON})
    await assert_rejected(streamed, 413, "exceeds 1048576 bytes")


async def test_huge_and_odd_values_inside_valid_json_are_422(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    cases = [
        {**match_body(mode, "x" * 10_000)},
        {**match_body(mode, f"{mode}-w"), "teams": [{"players": [{"id": "a", "weight": 1e308}], "rank": 0}]},
        {**match_body(mode, f"{mode}-r"), "teams": [{"players": [{"id": "a"}], "rank": 10**30}] * 2},
        {**match_body(mode, f"{mode}-t"), "played_at": "9999-99-99T99:99:99Z"},
        {**match_body(mode, f"{mode}-n"), "teams": []},
        [1, 2, 3],
        "a string",
        None,
    ]
    for body in cases:
        response = await client.post("/v1/matches", json=body, headers=admin_headers)
        assert response.status_code == 422, (
            body if not isinstance(body, dict) else body.get("match_id"),
            response.text,
        )
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["detail"]
    rated = await client.get(f"/v1/leaderboards/{mode}", headers=admin_headers)
    assert rated.json()["entries"] == []
