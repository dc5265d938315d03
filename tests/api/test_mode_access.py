"""Keys limited to modes: a key for one game tried against every route, with another game's modes.

Every route of the app is classified below. A route that names a mode (a `{mode}` in its path,
a `mode` in its query or anywhere in its body) must be in MODE_BOUND, where the limited key is
sent with a foreign mode (403) and with one of its own (let through); so a route added later
without the check fails here. Routes that reach a mode through what they find (a match, a job)
answer 404 for another game's; lists leave other games out; an erasure, which spans every
mode, is refused to a limited key; keys made by a limited admin key stay within its modes.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import TypeAdapter

from app.ids import ModeScope
from tests.jobs.test_jobs import run_job

Headers = dict[str, str]
Request = tuple[str, str, Any]  # method, path, JSON body (None: no body)


def match(mode: str, match_id: str) -> dict[str, Any]:
    return {
        "match_id": match_id,
        "mode": mode,
        "teams": [{"players": [{"id": "pa"}], "rank": 0}, {"players": [{"id": "pb"}], "rank": 1}],
    }


# The request of each mode-bound route, for a mode. What counts is the key's check: an own mode
# may still be a 404 (no such ticket) or a 409, never a 401 or 403.
MODE_BOUND: dict[str, Callable[[str], Request]] = {
    "put_mode": lambda m: ("PUT", f"/v1/modes/{m}", {}),
    "get_mode": lambda m: ("GET", f"/v1/modes/{m}", None),
    "get_tier_counts": lambda m: ("GET", f"/v1/modes/{m}/tiers", None),
    "submit_job": lambda m: ("POST", f"/v1/modes/{m}/jobs", {"kind": "replay"}),
    "start_season": lambda m: ("POST", f"/v1/modes/{m}/seasons", {"name": f"s-{secrets.token_hex(3)}"}),
    "post_match": lambda m: ("POST", "/v1/matches", match(m, f"{m}-{secrets.token_hex(4)}")),
    "post_matches_batch": lambda m: (
        "POST",
        "/v1/matches/batch",
        {"matches": [match(m, f"{m}-{secrets.token_hex(4)}")]},
    ),
    "put_player_rating": lambda m: ("PUT", f"/v1/players/pa/ratings/{m}", {"mu": 25.0, "sigma": 8.0}),
    "get_player_matches": lambda m: ("GET", f"/v1/players/pa/matches?mode={m}", None),
    "get_learning_curve": lambda m: ("GET", f"/v1/players/pa/learning-curve?mode={m}", None),
    "evaluate_lobby": lambda m: ("POST", "/v1/lobbies/evaluate", {"mode": m, "teams": [["pa"], ["pb"]]}),
    "balance_lobby": lambda m: ("POST", "/v1/lobbies/balance", {"mode": m, "players": ["pa", "pb"]}),
    "create_ticket": lambda m: ("POST", f"/v1/queues/{m}/tickets", {"players": [f"q{secrets.token_hex(3)}"]}),
    "create_tickets": lambda m: (
        "POST",
        f"/v1/queues/{m}/tickets/batch",
        {"tickets": [{"players": [f"q{secrets.token_hex(3)}"]}]},
    ),
    "get_ticket": lambda m: ("GET", f"/v1/queues/{m}/tickets/no-such-ticket", None),
    "get_player_ticket": lambda m: ("GET", f"/v1/queues/{m}/players/pa/ticket", None),
    "cancel_ticket": lambda m: ("DELETE", f"/v1/queues/{m}/tickets/no-such-ticket", None),
    "matchmake": lambda m: ("POST", f"/v1/queues/{m}/matchmake", {}),
    "requeue_proposal": lambda m: ("POST", f"/v1/queues/{m}/proposals/no-such-proposal/requeue", {}),
    "queue_stats": lambda m: ("GET", f"/v1/queues/{m}", None),
    "queue_statistics": lambda m: ("GET", f"/v1/queues/{m}/stats", None),
    "get_proposal": lambda m: ("GET", f"/v1/queues/{m}/proposals/no-such-proposal", None),
    "accept_proposal": lambda m: (
        "POST",
        f"/v1/queues/{m}/proposals/no-such-proposal/accept",
        {"players": ["pa"]},
    ),
    "decline_proposal": lambda m: (
        "POST",
        f"/v1/queues/{m}/proposals/no-such-proposal/decline",
        {"players": ["pa"]},
    ),
    "create_backfill": lambda m: ("POST", f"/v1/queues/{m}/backfills", {"teams": [["pa"], []]}),
    "get_backfill": lambda m: ("GET", f"/v1/queues/{m}/backfills/no-such-backfill", None),
    "replace_backfill": lambda m: (
        "PUT",
        f"/v1/queues/{m}/backfills/no-such-backfill",
        {"teams": [["pa"], []]},
    ),
    "delete_backfill": lambda m: ("DELETE", f"/v1/queues/{m}/backfills/no-such-backfill", None),
    "get_leaderboard": lambda m: ("GET", f"/v1/leaderboards/{m}", None),
    "get_leaderboard_standing": lambda m: ("GET", f"/v1/leaderboards/{m}/players/pa", None),
    # The ops page (HTML): a foreign mode's leaderboard or player page is its 403 page.
    "ui.leaderboard": lambda m: ("GET", f"/ui/modes/{m}", None),
    "ui.player": lambda m: ("GET", f"/ui/players/pa?mode={m}", None),
}
# What these reach is found by an id, and its mode then: another game's is not found (404).
FOUND_BY_ID = {"get_match", "void_match", "get_job", "retry_job"}
# Lists and profiles: another game's entries are left out.
FILTERED = {"list_modes", "get_player", "ui.modes"}
# Spans every mode: refused (403) to a limited key.
EVERY_MODE = {"delete_player"}
# Keys, made, listed and revoked by a limited admin key within its modes.
KEYS = {"create_key", "list_keys", "revoke_key"}
# Names a mode but reads nothing: the ops page's search box sends the browser on to ui.player.
PASSES_ON = {"ui.find_player"}
# Nothing of a mode: health, metrics, documentation, signing in and out.
UNBOUND = {
    "healthz",
    "readyz",
    "metrics",
    "swagger_ui",
    "redoc",
    "ui.login_form",
    "ui.login",
    "ui.logout",
}


def has_mode_field(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "mode" in schema.get("properties", {}) or any(has_mode_field(v) for v in schema.values())
    if isinstance(schema, list):
        return any(has_mode_field(v) for v in schema)
    return False


def routes(app: FastAPI) -> dict[str, APIRoute]:
    """Every route of the app by its operation id (ops page routes: ui.<function>)."""
    found: dict[str, APIRoute] = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            name = route.operation_id or (f"ui.{route.name}" if route.path.startswith("/ui") else route.name)
            assert name not in found, name
            found[name] = route
    return found


def names_a_mode(route: APIRoute) -> bool:
    """A `mode` path or query parameter, or a `mode` anywhere in the body's schema."""
    dependants = [route.dependant]
    params = []
    while dependants:
        dependant = dependants.pop()
        dependants.extend(dependant.dependencies)
        params.extend(dependant.path_params + dependant.query_params)
        if any(
            has_mode_field(TypeAdapter(b.field_info.annotation).json_schema()) for b in dependant.body_params
        ):
            return True
    return any(p.name == "mode" for p in params) or "{mode}" in route.path


def test_every_route_is_classified_and_every_route_naming_a_mode_is_checked(app: FastAPI) -> None:
    found = routes(app)
    naming = {name for name, route in found.items() if names_a_mode(route)}
    assert naming <= set(MODE_BOUND) | PASSES_ON, (
        f"these routes take a mode; check it, and list them in MODE_BOUND: {naming - set(MODE_BOUND)}"
    )
    classes = [set(MODE_BOUND), FOUND_BY_ID, FILTERED, EVERY_MODE, KEYS, PASSES_ON, UNBOUND]
    assert set(found) == set().union(*classes), "classify every route above"
    assert sum(len(c) for c in classes) == len(found)  # each in one class only


async def limited_key(
    client: httpx.AsyncClient, admin: Headers, scopes: list[str], modes: list[str]
) -> Headers:
    created = await client.post(
        "/v1/keys", json={"name": "game", "scopes": scopes, "modes": modes}, headers=admin
    )
    assert created.status_code == 201, created.text
    assert created.json()["modes"] == modes
    return {"Authorization": f"Bearer {created.json()['key']}"}


@pytest.fixture
async def games(client: httpx.AsyncClient, admin_headers: Headers) -> dict[str, str]:
    """Two modes of game g (g…-a, g…-b) and one of game h, each with a match of pa and pb."""
    tag = secrets.token_hex(3)
    made = {"own": f"g{tag}-a", "own_too": f"g{tag}-b", "foreign": f"h{tag}-a"}
    for mode in made.values():
        assert (await client.put(f"/v1/modes/{mode}", json={}, headers=admin_headers)).status_code == 200
        posted = await client.post("/v1/matches", json=match(mode, f"{mode}-seed"), headers=admin_headers)
        assert posted.status_code == 201, posted.text
    return made | {"prefix": f"g{tag}-*"}


async def test_a_key_limited_to_its_game_is_refused_every_route_of_another_game(
    app: FastAPI, client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    key = await limited_key(client, admin_headers, ["admin"], [games["prefix"]])
    foreign, own = games["foreign"], games["own"]
    for name, request in MODE_BOUND.items():
        method, path, body = request(foreign)
        refused = await client.request(method, path, json=body, headers=key)
        if name == "post_matches_batch":  # the item, not the batch, is refused
            assert refused.status_code == 200, refused.text
            [item] = refused.json()["results"]
            assert item["status"] == 403 and item["problem"]["status"] == 403, item
            assert foreign in item["problem"]["detail"]
        elif name.startswith("ui."):
            assert refused.status_code == 403 and "<html" in refused.text, (name, refused.status_code)
        else:
            assert refused.status_code == 403, (name, refused.status_code, refused.text)
            assert refused.headers["content-type"] == "application/problem+json"
            assert foreign in refused.json()["detail"] and games["prefix"] in refused.json()["detail"]

        method, path, body = request(own)
        allowed = await client.request(method, path, json=body, headers=key)
        assert allowed.status_code not in (401, 403) and allowed.status_code < 500, (name, allowed.text)
        if name == "post_matches_batch":
            assert allowed.json()["results"][0]["status"] == 201
    passed_on = await client.get(f"/ui/players?id=pa&mode={foreign}", headers=key)
    assert passed_on.status_code == 303
    assert (await client.get(passed_on.headers["location"], headers=key)).status_code == 403
    # Nothing of the foreign game changed: its one match, no ticket, no season.
    history = await client.get(f"/v1/players/pa/matches?mode={foreign}", headers=admin_headers)
    assert [m["match_id"] for m in history.json()["matches"]] == [f"{foreign}-seed"]
    assert (await client.get(f"/v1/queues/{foreign}", headers=admin_headers)).json()["tickets"] == 0
    detail = (await client.get(f"/v1/modes/{foreign}", headers=admin_headers)).json()
    assert detail["season"]["name"] == "preseason" and detail["past_seasons"] == []


async def test_what_is_found_by_id_in_another_game_is_not_found(
    client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    key = await limited_key(client, admin_headers, ["admin"], [games["own"]])
    foreign_job = await run_job(client, admin_headers, games["foreign"], {"kind": "replay"})
    own_job = await run_job(client, admin_headers, games["own"], {"kind": "replay"})
    for path in (f"/v1/matches/{games['foreign']}-seed", f"/v1/jobs/{foreign_job['job_id']}"):
        hidden = await client.get(path, headers=key)
        assert hidden.status_code == 404, (path, hidden.text)
        # Word for word what an id never used gets: nothing tells the two apart.
        never = await client.get(path.rsplit("/", 1)[0] + "/never-used-id", headers=key)
        assert hidden.json()["detail"].split("'")[0] == never.json()["detail"].split("'")[0]
    not_voided = await client.post(f"/v1/matches/{games['foreign']}-seed/void", headers=key)
    assert not_voided.status_code == 404
    stored = await client.get(f"/v1/matches/{games['foreign']}-seed", headers=admin_headers)
    assert stored.json()["void"] is False
    assert (await client.get(f"/v1/matches/{games['own']}-seed", headers=key)).status_code == 200
    assert (await client.get(f"/v1/jobs/{own_job['job_id']}", headers=key)).status_code == 200
    # A retry finds the job as a read does: another game's is not found; its own done job is a 409.
    assert (await client.post(f"/v1/jobs/{foreign_job['job_id']}/retry", headers=key)).status_code == 404
    assert (await client.post(f"/v1/jobs/{own_job['job_id']}/retry", headers=key)).status_code == 409
    assert (await client.post(f"/v1/matches/{games['own']}-seed/void", headers=key)).json()["void"] is True


async def test_lists_and_profiles_leave_other_games_out(
    client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    key = await limited_key(client, admin_headers, ["read"], [games["prefix"]])
    ours = {games["own"], games["own_too"]}
    listed = {m["name"] for m in (await client.get("/v1/modes", headers=key)).json()["modes"]}
    assert ours <= listed and games["foreign"] not in listed
    assert all(ModeScope([games["prefix"]]).allows(name) for name in listed)

    profile = (await client.get("/v1/players/pa", headers=key)).json()
    assert {r["mode"] for r in profile["ratings"]} <= listed and ours <= {
        r["mode"] for r in profile["ratings"]
    }
    full = (await client.get("/v1/players/pa", headers=admin_headers)).json()
    assert games["foreign"] in {r["mode"] for r in full["ratings"]}

    history = (await client.get("/v1/players/pa/matches?limit=100", headers=key)).json()["matches"]
    assert {m["mode"] for m in history} & {games["foreign"]} == set()
    assert {f"{m}-seed" for m in ours} <= {m["match_id"] for m in history}

    page = await client.get("/ui", headers=key)
    assert page.status_code == 200
    assert (
        f'href="/ui/modes/{games["own"]}"' in page.text and f"/ui/modes/{games['foreign']}" not in page.text
    )
    player = await client.get("/ui/players/pa", headers=key)
    assert player.status_code == 200 and games["foreign"] not in player.text


async def test_a_learning_curve_without_a_mode_picks_among_the_keys_modes(
    client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    player = f"lc-{secrets.token_hex(4)}"
    for mode in (games["own"], games["own_too"], games["foreign"]):
        rated = await client.put(
            f"/v1/players/{player}/ratings/{mode}", json={"mu": 25.0, "sigma": 8.0}, headers=admin_headers
        )
        assert rated.status_code == 200
    # Rated in three modes: for a key for every mode, a 422 naming them.
    path = f"/v1/players/{player}/learning-curve"
    everything = await client.get(path, headers=admin_headers)
    assert everything.status_code == 422 and games["foreign"] in everything.json()["detail"]
    key = await limited_key(client, admin_headers, ["read"], [games["own"]])
    curve = await client.get(path, headers=key)
    assert curve.status_code == 200 and curve.json()["mode"] == games["own"]
    wider = await limited_key(client, admin_headers, ["read"], [games["prefix"]])
    named = await client.get(path, headers=wider)
    assert named.status_code == 422 and "rated in 2 modes" in named.json()["detail"]
    assert games["foreign"] not in named.json()["detail"]


async def test_an_erasure_spans_every_mode_so_a_limited_key_may_not_erase(
    client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    key = await limited_key(client, admin_headers, ["admin"], [games["prefix"]])
    refused = await client.delete("/v1/players/pa", headers=key)
    assert refused.status_code == 403 and "every mode" in refused.json()["detail"]
    assert (await client.get("/v1/players/pa", headers=admin_headers)).status_code == 200


async def test_a_limited_admin_key_manages_keys_within_its_modes_only(
    client: httpx.AsyncClient, admin_headers: Headers, games: dict[str, str]
) -> None:
    admin = await limited_key(client, admin_headers, ["admin"], [games["prefix"]])
    narrower = await client.post(
        "/v1/keys", json={"name": "one mode", "scopes": ["read"], "modes": [games["own"]]}, headers=admin
    )
    assert narrower.status_code == 201 and narrower.json()["modes"] == [games["own"]]
    for modes in ([games["foreign"]], [games["own"], games["foreign"]], ["g*"], None):
        wider = await client.post(
            "/v1/keys", json={"name": "wider", "scopes": ["read"], "modes": modes}, headers=admin
        )
        assert wider.status_code == 403, (modes, wider.text)
    other_game = await client.post(
        "/v1/keys", json={"name": "h", "scopes": ["read"], "modes": [games["foreign"]]}, headers=admin_headers
    )
    listed = {k["id"]: k for k in (await client.get("/v1/keys", headers=admin)).json()["keys"]}
    assert narrower.json()["id"] in listed and other_game.json()["id"] not in listed
    assert all(k["modes"] is not None for k in listed.values())  # no key for every mode either
    everything = {k["id"]: k for k in (await client.get("/v1/keys", headers=admin_headers)).json()["keys"]}
    assert everything[other_game.json()["id"]]["modes"] == [games["foreign"]]
    assert (await client.delete(f"/v1/keys/{other_game.json()['id']}", headers=admin)).status_code == 404
    assert (await client.delete(f"/v1/keys/{narrower.json()['id']}", headers=admin)).status_code == 204


@pytest.mark.parametrize(
    "modes", [[], ["*"], ["has space"], ["fps-**"], ["x" * 129], ["a*b"]], ids=lambda m: repr(m)[:20]
)
async def test_malformed_modes_are_a_422_naming_the_field(
    client: httpx.AsyncClient, admin_headers: Headers, modes: list[str]
) -> None:
    response = await client.post(
        "/v1/keys", json={"name": "x", "scopes": ["read"], "modes": modes}, headers=admin_headers
    )
    assert response.status_code == 422
    assert any("modes" in e["loc"] for e in response.json()["errors"]), response.json()


def test_mode_patterns_allow_names_and_prefixes() -> None:
    scope = ModeScope(["fps-*", "chess"])
    assert scope.allows("fps-eu") and scope.allows("fps-") and scope.allows("chess")
    assert not scope.allows("chess960") and not scope.allows("fp") and not scope.allows("FPS-eu")
    assert scope.covers(ModeScope(["fps-eu-*", "fps-na", "chess"]))
    assert not scope.covers(ModeScope(["fps*"])) and not scope.covers(ModeScope(["chess*"]))
    assert not scope.covers(ModeScope()) and ModeScope().covers(scope)
    # LIKE patterns: `_` is a wildcard there, and may be in a name.
    assert ModeScope(["a_b", "c_*"]).like_patterns() == ["a\\_b", "c\\_%"]
    assert ModeScope().like_patterns() is None
