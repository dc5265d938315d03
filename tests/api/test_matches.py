"""POST/GET/void matches and POST /v1/matches/batch: the contract of API.md, validation and
idempotency. What recording does is the pipeline's (tests/matches/test_recording.py)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import httpx
import pytest

from app.client import ApiError, AsyncClient


def match(match_id: str, mode: str, *teams: list[str], ranks: list[float] | None = None) -> dict[str, Any]:
    ranks = ranks if ranks is not None else list(range(len(teams)))
    return {
        "match_id": match_id,
        "mode": mode,
        "teams": [
            {"players": [{"id": p} for p in team], "rank": r} for team, r in zip(teams, ranks, strict=True)
        ],
    }


async def test_post_then_get(api: AsyncClient, mode: str) -> None:
    created = await api.post_match(match(f"{mode}-1", mode, ["ann"], ["ben"]))
    assert created.created is True
    assert [p.player_id for p in created.players] == ["ann", "ben"]
    assert round(created.players[0].after.mu, 3) == 29.396
    assert created.players[0].before.conservative == pytest.approx(25 - 3 * 25 / 3)
    assert created.quality == pytest.approx(0.4472135954999579)
    fetched = await api.get_match(f"{mode}-1")
    assert fetched.created is False
    assert fetched.players == created.players


async def test_same_body_again_is_200_with_the_stored_response(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    body = match(f"{mode}-r", mode, ["ann"], ["ben"])
    first = await client.post("/v1/matches", json=body, headers=admin_headers)
    again = await client.post("/v1/matches", json=body, headers=admin_headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == {**first.json(), "created": False}
    player = (await client.get("/v1/players/ann", headers=admin_headers)).json()
    assert next(r for r in player["ratings"] if r["mode"] == mode)["matches"] == 1


async def test_a_retry_answers_the_bytes_of_the_201_but_for_created(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    body = {**match(f"{mode}-b", mode, ["ann", "bob"], ["cy"]), "played_at": "2026-01-02T03:04:05.25+02:00"}
    body["teams"][0]["players"][1]["weight"] = 0.5
    first = await client.post("/v1/matches", json=body, headers=admin_headers)
    again = await client.post("/v1/matches", json=body, headers=admin_headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.content.count(b'"created":true') == 1
    assert again.content == first.content.replace(b'"created":true', b'"created":false')


async def test_played_at_is_compared_as_an_instant(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    body = {**match(f"{mode}-t", mode, ["ann"], ["ben"]), "played_at": "2026-01-02T10:00:00Z"}
    assert (await client.post("/v1/matches", json=body, headers=admin_headers)).status_code == 201
    for same in ("2026-01-02T11:00:00+01:00", "2026-01-02T10:00:00.000+00:00", "2026-01-02T05:00:00-05:00"):
        again = await client.post("/v1/matches", json={**body, "played_at": same}, headers=admin_headers)
        assert again.status_code == 200, (same, again.text)
        assert again.json()["played_at"] == "2026-01-02T10:00:00Z"
    later = await client.post(
        "/v1/matches", json={**body, "played_at": "2026-01-02T11:00:00Z"}, headers=admin_headers
    )
    assert later.status_code == 409
    assert "2026-01-02T10:00:00Z" in later.json()["detail"]
    omitted = {k: v for k, v in body.items() if k != "played_at"}
    assert (await client.post("/v1/matches", json=omitted, headers=admin_headers)).status_code == 200


async def test_a_retry_may_send_back_the_stamped_played_at_or_omit_it(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    body = match(f"{mode}-s", mode, ["ann"], ["ben"])
    first = await client.post("/v1/matches", json=body, headers=admin_headers)
    stamped = first.json()["played_at"]
    back = await client.post("/v1/matches", json={**body, "played_at": stamped}, headers=admin_headers)
    assert (first.status_code, back.status_code) == (201, 200)
    assert back.json() == {**first.json(), "created": False}
    assert (await client.post("/v1/matches", json=body, headers=admin_headers)).status_code == 200
    player = (await client.get("/v1/players/ann", headers=admin_headers)).json()
    assert next(r for r in player["ratings"] if r["mode"] == mode)["matches"] == 1


async def test_a_score_retried_as_its_rank_is_the_same_match(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    # The rating reads a score as its negated rank (the fingerprint does too); 0 negates to -0.0.
    scored = {
        "match_id": f"{mode}-sc",
        "mode": mode,
        "teams": [{"players": [{"id": "ann"}], "score": 3}, {"players": [{"id": "ben"}], "score": 0}],
    }
    ranked = {
        **scored,
        "teams": [{"players": [{"id": "ann"}], "rank": -3}, {"players": [{"id": "ben"}], "rank": 0}],
    }
    assert (await client.post("/v1/matches", json=scored, headers=admin_headers)).status_code == 201
    assert (await client.post("/v1/matches", json=ranked, headers=admin_headers)).status_code == 200


@pytest.mark.parametrize(
    "change",
    [
        lambda b: b["teams"][1].update(rank=2),
        lambda b: b["teams"][0]["players"][0].update(weight=0.5),
        lambda b: b["teams"][0]["players"].append({"id": "cy"}),
        lambda b: b["teams"][1]["players"][0].update(id="cy"),
        lambda b: b["teams"].reverse(),
    ],
    ids=["rank", "weight", "extra player", "other player", "teams swapped"],
)
async def test_any_real_difference_is_409(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str, change: Any
) -> None:
    body = match(f"{mode}-d", mode, ["ann"], ["ben"])
    assert (await client.post("/v1/matches", json=body, headers=admin_headers)).status_code == 201
    changed = copy.deepcopy(body)
    change(changed)
    assert (await client.post("/v1/matches", json=changed, headers=admin_headers)).status_code == 409


async def test_different_body_under_a_used_id_is_409(api: AsyncClient, mode: str) -> None:
    await api.post_match(match(f"{mode}-c", mode, ["ann"], ["ben"]))
    with pytest.raises(ApiError) as caught:
        await api.post_match(match(f"{mode}-c", mode, ["ben"], ["ann"]))
    assert caught.value.status == 409


async def test_unknown_mode_is_404(api: AsyncClient) -> None:
    with pytest.raises(ApiError) as caught:
        await api.post_match(match("x-404", "no-such-mode", ["ann"], ["ben"]))
    assert caught.value.status == 404
    assert "no-such-mode" in caught.value.problem["detail"]


def _players(n: int) -> list[dict[str, str]]:
    return [{"id": f"p{i}"} for i in range(n)]


# Far enough ahead that a slow run (the module is imported long before this test runs) still
# posts it in the future.
FUTURE = (dt.datetime.now(dt.UTC) + dt.timedelta(days=365)).isoformat()
INVALID = [
    ("one team", {"teams": [{"players": [{"id": "a"}], "rank": 1}]}, ["body", "teams"]),
    (
        "empty team",
        {"teams": [{"players": [], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}]},
        ["body", "teams", 0, "players"],
    ),
    (
        "same player twice",
        {"teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "a"}], "rank": 2}]},
        ["body", "teams", 1, "players", 0, "id"],
    ),
    (
        "rank and score mixed",
        {"teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "b"}], "score": 2}]},
        ["body", "teams"],
    ),
    (
        "rank missing",
        {"teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "b"}]}]},
        ["body", "teams", 1],
    ),
    (
        "weight above 1",
        {
            "teams": [
                {"players": [{"id": "a", "weight": 1.5}], "rank": 1},
                {"players": [{"id": "b"}], "rank": 2},
            ]
        },
        ["body", "teams", 0, "players", 0, "weight"],
    ),
    (
        "weight below 0",
        {
            "teams": [
                {"players": [{"id": "a", "weight": -0.1}], "rank": 1},
                {"players": [{"id": "b"}], "rank": 2},
            ]
        },
        ["body", "teams", 0, "players", 0, "weight"],
    ),
    (
        "bad player id",
        {"teams": [{"players": [{"id": "a b"}], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}]},
        ["body", "teams", 0, "players", 0, "id"],
    ),
    (
        "player id too long",
        {"teams": [{"players": [{"id": "a" * 129}], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}]},
        ["body", "teams", 0, "players", 0, "id"],
    ),
    (
        "over 1000 players",
        {
            "teams": [
                {"players": _players(600), "rank": 1},
                {"players": [{"id": f"q{i}"} for i in range(401)], "rank": 2},
            ]
        },
        ["body", "teams"],
    ),
    (
        "played_at in the future",
        {
            "played_at": FUTURE,
            "teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}],
        },
        ["body", "played_at"],
    ),
    (
        "played_at without zone",
        {
            "played_at": "2026-01-01T10:00:00",
            "teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}],
        },
        ["body", "played_at"],
    ),
    (
        "NaN rank",
        {"teams": [{"players": [{"id": "a"}], "rank": "NaN"}, {"players": [{"id": "b"}], "rank": 2}]},
        ["body", "teams", 0, "rank"],
    ),
    (
        "all weights zero",
        {
            "teams": [
                {"players": [{"id": "a", "weight": 0}], "rank": 1},
                {"players": [{"id": "b"}], "rank": 2},
            ]
        },
        ["body", "teams", 0, "players"],
    ),
]


@pytest.mark.parametrize(("name", "fields", "loc"), INVALID, ids=[case[0] for case in INVALID])
async def test_invalid_match_is_422_naming_the_field(
    client: httpx.AsyncClient,
    admin_headers: dict[str, str],
    name: str,
    fields: dict[str, Any],
    loc: list[Any],
) -> None:
    response = await client.post("/v1/matches", json={"match_id": "bad-1", **fields}, headers=admin_headers)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert loc in [error["loc"] for error in response.json()["errors"]], response.json()
    assert (await client.get("/v1/matches/bad-1", headers=admin_headers)).status_code == 404


async def test_bad_match_id_is_422(client: httpx.AsyncClient, admin_headers: dict[str, str]) -> None:
    body = match("has space", "default", ["a"], ["b"])
    response = await client.post("/v1/matches", json=body, headers=admin_headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "match_id"]


async def test_body_over_a_megabyte_is_413(client: httpx.AsyncClient, admin_headers: dict[str, str]) -> None:
    padding = [{"id": "p" * 120} for _ in range(9000)]
    response = await client.post(
        "/v1/matches", json={"match_id": "big", "teams": [{"players": padding}]}, headers=admin_headers
    )
    assert response.status_code == 413


async def test_scores_are_higher_is_better(api: AsyncClient, mode: str) -> None:
    by_score = await api.post_match(
        {
            "match_id": f"{mode}-s",
            "mode": mode,
            "teams": [{"players": [{"id": "s1"}], "score": 10}, {"players": [{"id": "s2"}], "score": 30}],
        }
    )
    assert by_score.players[1].after.mu > by_score.players[1].before.mu


async def test_counters_and_last_played_at(api: AsyncClient, mode: str) -> None:
    played = "2026-01-02T03:04:05Z"
    await api.post_match({**match(f"{mode}-a", mode, ["c1"], ["c2"], ["c3"]), "played_at": played})
    await api.post_match(match(f"{mode}-b", mode, ["c1"], ["c2"], ranks=[1, 1]))
    ratings = {
        p: next(r for r in (await api.get_player(p)).ratings if r.mode == mode) for p in ("c1", "c2", "c3")
    }
    assert (ratings["c1"].matches, ratings["c1"].wins, ratings["c1"].losses, ratings["c1"].draws) == (
        2,
        1,
        0,
        1,
    )
    assert (ratings["c2"].matches, ratings["c2"].wins, ratings["c2"].losses, ratings["c2"].draws) == (
        2,
        0,
        1,
        1,
    )
    assert (ratings["c3"].wins, ratings["c3"].losses) == (0, 1)
    assert ratings["c3"].last_played_at == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


async def test_void_is_admin_only_and_marks_the_match(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    await api.post_match(match(f"{mode}-v", mode, ["v1"], ["v2"]))
    created = await client.post(
        "/v1/keys", json={"name": "backend", "scopes": ["results:write", "read"]}, headers=admin_headers
    )
    backend = {"Authorization": f"Bearer {created.json()['key']}"}
    assert (await client.post(f"/v1/matches/{mode}-v/void", headers=backend)).status_code == 403
    voided = await api.void_match(f"{mode}-v")
    assert voided.void is True
    assert (await api.get_match(f"{mode}-v")).void is True
    assert (await client.post("/v1/matches/nope/void", headers=admin_headers)).status_code == 404


async def test_results_write_key_can_post_but_not_read_modes(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    created = await client.post(
        "/v1/keys", json={"name": "gb", "scopes": ["results:write"]}, headers=admin_headers
    )
    backend = {"Authorization": f"Bearer {created.json()['key']}"}
    posted = await client.post("/v1/matches", json=match(f"{mode}-k", mode, ["k1"], ["k2"]), headers=backend)
    assert posted.status_code == 201
    assert (await client.get(f"/v1/modes/{mode}", headers=backend)).status_code == 403


async def post_batch(
    client: httpx.AsyncClient, headers: dict[str, str], items: list[Any]
) -> list[dict[str, Any]]:
    response = await client.post("/v1/matches/batch", json={"matches": items}, headers=headers)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    assert len(results) == len(items)
    return results


async def test_a_batch_answers_each_item_as_its_single_post(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    taken = match(f"{mode}-taken", mode, ["a1"], ["a2"])
    assert (await client.post("/v1/matches", json=taken, headers=admin_headers)).status_code == 201
    both = match(f"{mode}-both", mode, ["b1"], ["b2"])
    both["teams"][0]["score"] = 3  # rank and score on one team: a cross-field rule
    items: list[Any] = [
        match(f"{mode}-new", mode, ["n1"], ["n2"]),  # 201
        taken,  # 200: the stored match
        match(f"{mode}-taken", mode, ["a1"], ["zz"]),  # 409: another match under a used id
        {"match_id": f"{mode}-bad", "mode": mode},  # 422: no teams
        both,  # 422: cross-field
        match(f"{mode}-nomode", f"{mode}-missing", ["c1"], ["c2"]),  # 422: unknown mode
        "not a match",  # 422: not even an object
        match(f"{mode}-last", mode, ["n1"], ["a1"]),  # 201, after the failures
    ]
    results = await post_batch(client, admin_headers, items)
    assert [r["status"] for r in results] == [201, 200, 409, 422, 422, 422, 422, 201]
    assert [r["match_id"] for r in results] == [
        f"{mode}-new",
        f"{mode}-taken",
        f"{mode}-taken",
        f"{mode}-bad",
        f"{mode}-both",
        f"{mode}-nomode",
        None,
        f"{mode}-last",
    ]
    for result in results:
        assert (result["match"] is None) == (result["status"] >= 400)
        assert (result["problem"] is None) == (result["status"] < 400)
        if result["problem"] is not None:
            assert result["problem"]["status"] == result["status"]
            assert result["problem"]["instance"] == "/v1/matches/batch"
    assert results[0]["match"]["created"] is True and results[1]["match"]["created"] is False
    # The stored match, byte for byte as the single post's retry gets it.
    single = await client.post("/v1/matches", json=taken, headers=admin_headers)
    assert single.status_code == 200 and results[1]["match"] == single.json()
    # Validation problems are the single post's, detail and located errors alike.
    for index in (3, 4):
        alone = await client.post("/v1/matches", json=items[index], headers=admin_headers)
        assert alone.status_code == 422
        assert results[index]["problem"]["detail"] == alone.json()["detail"]
        assert results[index]["problem"]["errors"] == alone.json()["errors"]
    # The last item played after the others were refused: n1 had played the first item.
    assert results[7]["match"]["players"][0]["before"] == results[0]["match"]["players"][0]["after"]
    fetched = await client.get(f"/v1/matches/{mode}-last", headers=admin_headers)
    assert fetched.json() == {**results[7]["match"], "created": False}


async def test_a_batch_is_exactly_once_with_single_posts_and_other_batches(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    first = match(f"{mode}-x", mode, ["x1"], ["x2"])
    other = match(f"{mode}-x", mode, ["x2"], ["x1"])
    results = await post_batch(client, admin_headers, [first, first, other, first])
    assert [r["status"] for r in results] == [201, 200, 409, 200]
    assert results[1]["match"] == {**results[0]["match"], "created": False}
    # Across batches and single posts alike.
    again = await post_batch(client, admin_headers, [other, first])
    assert [r["status"] for r in again] == [409, 200]
    assert (await client.post("/v1/matches", json=first, headers=admin_headers)).status_code == 200
    player = (await client.get("/v1/players/x1", headers=admin_headers)).json()
    assert next(r for r in player["ratings"] if r["mode"] == mode)["matches"] == 1
    # A 422 first leaves the id free: the next item with it is the first post.
    bad = {**first, "match_id": f"{mode}-y", "teams": first["teams"][:1]}
    good = {**first, "match_id": f"{mode}-y"}
    assert [r["status"] for r in await post_batch(client, admin_headers, [bad, good, good])] == [
        422,
        201,
        200,
    ]


async def test_an_envelope_that_is_not_1_to_1000_matches_applies_nothing(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    good = match(f"{mode}-e", mode, ["e1"], ["e2"])
    for body in (
        {"matches": []},
        {"matches": [good] * 1001},
        {"matches": good},
        {"match": [good]},
        {"matches": [good], "extra": 1},
        [good],
    ):
        response = await client.post("/v1/matches/batch", json=body, headers=admin_headers)
        assert response.status_code == 422, body
        assert response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get(f"/v1/matches/{mode}-e", headers=admin_headers)).status_code == 404
    player = (await client.get("/v1/players/e1", headers=admin_headers)).json()
    assert mode not in {r["mode"] for r in player.get("ratings", [])}
