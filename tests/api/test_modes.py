"""Modes: PUT creates with defaults and merges later changes; reads need the read scope."""

from __future__ import annotations

import secrets

import httpx
import pytest

from app.client import ApiError, AsyncClient


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


async def test_unknown_mode_is_404(api: AsyncClient) -> None:
    with pytest.raises(ApiError) as caught:
        await api.get_mode("never-made")
    assert caught.value.status == 404
