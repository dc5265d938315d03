"""The command line: keys made, listed and revoked; the line naming the database; failures as
one line on stderr (2: usage and configuration, 1: anything else); the console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import uuid
from importlib import import_module
from pathlib import Path

import httpx
import pytest

from tests.reliability.process import free_port

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def failure_line(result: subprocess.CompletedProcess[str], status: int) -> str:
    """The one line a failed command ends with (after the one naming its database, if any)."""
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 or (len(lines) == 2 and lines[0].startswith("database: ")), lines
    assert "error: " in lines[-1], lines
    return lines[-1]


async def test_keys_create_list_revoke(database_url: str, redis_url: str, client: httpx.AsyncClient) -> None:
    env = {"DATABASE_URL": database_url, "REDIS_URL": redis_url}
    result = run("keys", "create", "--name", "ops", "--scopes", "read,admin", **env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[0] == f"database: {database_url}"
    created = json.loads(result.stdout)
    assert created["scopes"] == ["read", "admin"]
    headers = {"Authorization": f"Bearer {created['key']}"}
    response = await client.get("/v1/keys", headers=headers)
    assert response.status_code == 200
    assert created["id"] in {k["id"] for k in response.json()["keys"]}

    listed = run("keys", "list", **env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)["keys"]}
    assert rows[created["id"]]["name"] == "ops" and rows[created["id"]]["revoked_at"] is None
    assert created["key"] not in listed.stdout

    assert run("keys", "revoke", created["id"], **env).returncode == 0
    listed = run("keys", "list", **env)
    rows = {row["id"]: row for row in json.loads(listed.stdout)["keys"]}
    assert rows[created["id"]]["revoked_at"] is not None
    again = failure_line(run("keys", "revoke", created["id"], **env), 1)
    assert created["id"] in again


def test_unknown_scope_is_one_line() -> None:
    line = failure_line(run("keys", "create", "--name", "x", "--scopes", "read,god"), 2)
    assert "god" in line


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["bogus"],
        ["replay"],
        ["keys", "create", "--name", "x"],
        ["import", "--mode", "m", "--column", "played_at", "x.csv"],
        ["import", "--mode", "m", "--skip", "winner~(", "x.csv"],
        ["smooth", "--mode", "m", "--iterations", "many"],
    ],
)
def test_bad_arguments_are_one_line_and_status_2(args: list[str]) -> None:
    assert "error" in failure_line(run(*args), 2)


def unknown_mode() -> str:
    """A mode no other test has created. The shared database holds every earlier test's modes,
    among them the input fuzzer's (tests/api/test_schemathesis.py, an admin key, any name the
    id pattern allows): a CI run once found 'zzz' taken."""
    return f"unknown-{uuid.uuid4().hex}"


@pytest.mark.parametrize("command", ["replay", "smooth"])
def test_an_unknown_mode_is_one_line_and_status_1(database_url: str, command: str) -> None:
    mode = unknown_mode()
    line = failure_line(run(command, "--mode", mode, DATABASE_URL=database_url), 1)
    assert line == f"error: mode '{mode}' does not exist; create it with PUT /v1/modes/{mode} (admin)"


def test_log_level_debug_shows_the_traceback(database_url: str) -> None:
    result = run("replay", "--mode", unknown_mode(), DATABASE_URL=database_url, LOG_LEVEL="DEBUG")
    assert result.returncode == 1
    assert "Traceback" in result.stderr and "UnknownMode" in result.stderr


def test_a_missing_import_file_is_one_line(database_url: str, tmp_path: Path) -> None:
    result = run("import", "--mode", "m", str(tmp_path / "none.csv"), DATABASE_URL=database_url)
    line = failure_line(result, 1)
    assert "none.csv" in line


def test_unreachable_servers_are_one_line_with_the_password_hidden(database_url: str) -> None:
    closed = free_port()
    url = f"postgresql://someone:s3cret@127.0.0.1:{closed}/skills"
    result = run("keys", "list", DATABASE_URL=url, DB_CONNECT_WAIT_S="1")
    line = failure_line(result, 1)
    assert "cannot reach the database" in line
    assert "s3cret" not in result.stderr
    assert result.stderr.splitlines()[0] == f"database: postgresql://someone:***@127.0.0.1:{closed}/skills"

    served = run(
        "serve",
        DATABASE_URL=database_url,
        REDIS_URL=f"redis://127.0.0.1:{closed}/0",
        DB_CONNECT_WAIT_S="1",
        LOG_LEVEL="WARNING",
        PORT=str(free_port()),
    )
    assert "cannot reach Redis" in failure_line(served, 1)


def test_a_bad_setting_is_a_configuration_error() -> None:
    line = failure_line(run("migrate", DATABASE_URL="mysql://somewhere/db"), 2)
    assert "configuration error: DATABASE_URL" in line


def test_the_console_script_names_the_cli_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["skillservice"].partition(":")
    entry = getattr(import_module(module), function)
    argv = sys.argv
    sys.argv = ["skillservice", "keys", "rotate"]
    try:
        with pytest.raises(SystemExit) as exit_:
            entry()
    finally:
        sys.argv = argv
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("skillservice keys: error: argument action: invalid choice: 'rotate'")
