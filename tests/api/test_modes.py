"""Modes: PUT creates with defaults and merges later changes; reads need the read scope."""

from __future__ import annotations

import secrets

import httpx
import pytest

from app.client import AsyncClient


async def test_default_mode_exists_on_a_fresh_install(api: AsyncClient) -> None:
    default = await api.get_mode("default")
    assert (default.mu, default.sigma, default.beta, default.draw_probability) == (25.0, 25 / 3, 25 / 6, 0.1)
    assert default.tau == pytest.approx(25 / 300)
    assert "default" in [m.name for m in await api.list_modes()]


async def test_put_creates_with_defaults_then_merges(api: AsyncClient) -> None:
    name = f"mode-{secrets.token_hex(3)}"
    created = await api.put_mode(name, sigma=10.0, draw_probability=0.2, teams=4, team_size=2)
    assert (created.beta, created.tau, created.mu) == (5.0, 0.1, 25.0)
    assert (created.teams, created.team_size) == (4, 2)
    changed = await api.put_mode(name, conservative_k=2.0)
    assert (changed.sigma, changed.draw_probability, changed.conservative_k) == (10.0, 0.2, 2.0)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"sigma": -1}, "sigma"),
        ({"draw_probability": 1.0}, "draw_probability"),
        ({"teams": 1}, "teams"),
        ({"team_performance": "median"}, "team_performance"),
        ({"beta": 0}, "beta"),
        ({"colour": "red"}, "colour"),
    ],
)
async def test_invalid_parameters_are_422(
    client: httpx.AsyncClient, admin_headers: dict[str, str], params: dict[str, object], field: str
) -> None:
    response = await client.put("/v1/modes/bad-mode", json=params, headers=admin_headers)
    assert response.status_code == 422
    assert field in str(response.json()["errors"][0]["loc"])


async def test_mode_names_follow_the_id_pattern(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    assert (await client.put("/v1/modes/has%20space", json={}, headers=admin_headers)).status_code == 422


async def test_unknown_mode_is_404_saying_how_to_create_it(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    match = {
        "match_id": "nm-1",
        "mode": "never-made",
        "teams": [{"players": [{"id": "a"}], "rank": 1}, {"players": [{"id": "b"}], "rank": 2}],
    }
    answers = [
        await client.get("/v1/modes/never-made", headers=admin_headers),
        await client.post("/v1/matches", json=match, headers=admin_headers),
        await client.post("/v1/queues/never-made/tickets", json={"players": ["a"]}, headers=admin_headers),
        await client.get("/v1/leaderboards/never-made", headers=admin_headers),
        await client.post("/v1/modes/never-made/jobs", json={"kind": "replay"}, headers=admin_headers),
    ]
    for answer in answers:
        assert answer.status_code == 404, answer.request.url
        assert answer.json()["detail"] == (
            "mode 'never-made' does not exist; create it with PUT /v1/modes/never-made (admin)"
        )


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({}, {"quality_floor": 0.5}),  # above the default start, 0.4
        ({"quality_floor": 0.3}, {"quality_start": 0.2}),
        ({}, {"quality_start": 0.2, "quality_floor": 0.3}),
    ],
)
async def test_a_floor_above_the_start_is_422_naming_both(
    client: httpx.AsyncClient, admin_headers: dict[str, str], first: dict[str, float], then: dict[str, float]
) -> None:
    name = f"floor-{secrets.token_hex(3)}"
    assert (await client.put(f"/v1/modes/{name}", json=first, headers=admin_headers)).status_code == 200
    refused = await client.put(f"/v1/modes/{name}", json=then, headers=admin_headers)
    assert refused.status_code == 422
    problem = refused.json()
    assert "quality_floor" in problem["detail"] and "quality_start" in problem["detail"]
    assert [error["loc"] for error in problem["errors"]] == [
        ["body", "quality_floor"],
        ["body", "quality_start"],
    ]
    kept = (await client.get(f"/v1/modes/{name}", headers=admin_headers)).json()
    assert kept["quality_floor"] <= kept["quality_start"]
    assert kept["quality_floor"] == first.get("quality_floor", 0.05)


async def test_a_floor_equal_to_the_start_is_accepted(api: AsyncClient) -> None:
    flat = await api.put_mode(f"flat-{secrets.token_hex(3)}", quality_start=0.3, quality_floor=0.3)
    assert (flat.quality_start, flat.quality_floor) == (0.3, 0.3)


async def test_replay_is_recommended_when_a_rating_parameter_changes_under_matches(api: AsyncClient) -> None:
    name = f"rp-{secrets.token_hex(3)}"
    assert (await api.put_mode(name)).replay_recommended is False  # created
    assert (await api.put_mode(name, beta=5.0)).replay_recommended is False  # no matches yet
    await api.post_match(
        {
            "match_id": f"{name}-1",
            "mode": name,
            "teams": [
                {"players": [{"id": f"{name}-a"}], "rank": 1},
                {"players": [{"id": f"{name}-b"}], "rank": 2},
            ],
        }
    )
    unchanged = {
        "same beta": {"beta": 5.0},
        "leaderboard only": {"conservative_k": 2.0, "min_matches_for_leaderboard": 3},
        "queue only": {"teams": 3, "quality_start": 0.5, "relax_seconds": 5.0, "ticket_ttl_seconds": 60.0},
    }
    for why, params in unchanged.items():
        assert (await api.put_mode(name, **params)).replay_recommended is False, why
    changed = {
        "beta": {"beta": 6.0},
        "mu": {"mu": 30.0},
        "sigma": {"sigma": 9.0},
        "tau": {"tau": 0.2},
        "draw probability": {"draw_probability": 0.2},
        "tie model": {"tie_model": "tie-layer"},
        "team performance": {"team_performance": "mean"},
        "size penalty": {"size_penalty_c1": 0.5},
        "roster cap": {"roster_cap": 7},
    }
    for why, params in changed.items():
        assert (await api.put_mode(name, **params)).replay_recommended is True, why
    # The read answers carry no such flag: it describes a change, not a mode.
    assert "replay_recommended" not in (await api.get_mode(name)).model_dump()


async def test_a_mode_sets_roles_and_minimums_and_clears_them_with_null(api: AsyncClient) -> None:
    name = f"mode-{secrets.token_hex(3)}"
    roles = {"tank": 1, "healer": 1, "damage": 3}
    created = await api.put_mode(name, team_size=5, roles=roles, teams_min=2)
    assert (created.roles, created.team_size_min, created.teams_min) == (roles, 5, 2)
    battle = await api.put_mode(f"br-{secrets.token_hex(3)}", teams=200, team_size=1, teams_min=60)
    assert (battle.teams, battle.teams_min, battle.team_size_min) == (200, 60, 1)
    cleared = await api.put_mode(name, roles=None, team_size_min=3)
    assert (cleared.roles, cleared.team_size_min) == (None, 3)
    assert (await api.get_mode(name)).team_size_min == 3
    back = await api.put_mode(name, team_size_min=None)
    assert back.team_size_min == 5


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"team_size": 5, "roles": {"tank": 1, "damage": 3}}, "roles", "add up to 4"),
        ({"team_size": 5, "roles": {"tank": 0, "damage": 5}}, "roles", ""),
        ({"team_size": 5, "team_size_min": 6}, "team_size_min", "above team_size"),
        ({"team_size": 5, "team_size_min": -1}, "team_size_min", ""),
        ({"teams": 4, "teams_min": 5}, "teams_min", "above teams"),
        ({"teams_min": 1}, "teams_min", ""),
        ({"teams": 100, "team_size": 5}, "teams", "only for teams of 4"),
        ({"teams": 201, "team_size": 1}, "teams", ""),
        ({"team_size": 5, "roles": {"tank": 1, "damage": 4}, "team_size_min": 4}, "team_size_min", "fixes"),
        ({"team_size": 5, "roles": {f"r{i}": 1 for i in range(9)}}, "roles", ""),
    ],
)
async def test_bad_shapes_are_422_naming_the_field(
    client: httpx.AsyncClient,
    admin_headers: dict[str, str],
    params: dict[str, object],
    field: str,
    words: str,
) -> None:
    name = f"shape-{secrets.token_hex(3)}"
    response = await client.put(f"/v1/modes/{name}", json=params, headers=admin_headers)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert any(e["loc"] == ["body", field] or e["loc"][:2] == ["body", field] for e in problem["errors"]), (
        problem
    )
    assert words in problem["detail"] or any(words in e["msg"] for e in problem["errors"])
    # Nothing was written.
    assert (await client.get(f"/v1/modes/{name}", headers=admin_headers)).status_code == 404


async def test_a_change_that_crosses_a_stored_minimum_names_both_fields(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    name = f"shape-{secrets.token_hex(3)}"
    assert (
        await client.put(
            f"/v1/modes/{name}", json={"team_size": 5, "team_size_min": 4}, headers=admin_headers
        )
    ).status_code == 200
    response = await client.put(f"/v1/modes/{name}", json={"team_size": 3}, headers=admin_headers)
    assert response.status_code == 422
    assert [e["loc"] for e in response.json()["errors"]] == [["body", "team_size"]]
    roles = {"tank": 1, "healer": 1, "damage": 3}
    assert (
        await client.put(
            f"/v1/modes/{name}", json={"team_size_min": None, "roles": roles}, headers=admin_headers
        )
    ).status_code == 200
    response = await client.put(f"/v1/modes/{name}", json={"team_size": 6}, headers=admin_headers)
    assert response.status_code == 422 and "add up to 5" in response.json()["detail"]
