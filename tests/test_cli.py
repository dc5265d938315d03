"""`python -m app keys create` makes a working key."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx


async def test_keys_create_prints_a_working_key(
    database_url: str, redis_url: str, client: httpx.AsyncClient
) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url}
    result = subprocess.run(
        [sys.executable, "-m", "app", "keys", "create", "--name", "ops", "--scopes", "read,admin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    created = json.loads(result.stdout)
    assert created["scopes"] == ["read", "admin"]
    response = await client.get("/v1/keys", headers={"Authorization": f"Bearer {created['key']}"})
    assert response.status_code == 200
    assert created["id"] in {k["id"] for k in response.json()["keys"]}


def test_unknown_scope_is_one_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app", "keys", "create", "--name", "x", "--scopes", "read,god"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "god" in result.stderr
