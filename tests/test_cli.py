"""The command line: keys made, listed and revoked; the line naming the database; failures as
one line on stderr (2: usage and configuration, 1: anything else); the console script."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import re
import select
import stat
import subprocess
import sys
import time
import tomllib
import uuid
from importlib import import_module
from pathlib import Path

import httpx
import psycopg
import pytest

from app.cli import BOOTSTRAP_KEY_FILE
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


# A line of a command's progress bar (app/progress.py), drawn from the start of its work.
BAR_LINE = re.compile(r"^\S+ +\[[#.]{30}\] +\d+\.\d+%")


def failure_line(result: subprocess.CompletedProcess[str], status: int) -> str:
    """The one line a failed command ends with (after the one naming its database, if any,
    and its progress bar's lines)."""
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.strip().splitlines() if not BAR_LINE.match(line)]
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


async def test_keys_create_limited_to_modes(database_url: str, client: httpx.AsyncClient) -> None:
    result = run(
        "keys",
        "create",
        "--name",
        "fps",
        "--scopes",
        "read",
        "--modes",
        "fps-*, chess",
        DATABASE_URL=database_url,
    )
    assert result.returncode == 0, result.stderr
    created = json.loads(result.stdout)
    assert created["modes"] == ["fps-*", "chess"]
    listed = {
        row["id"]: row for row in json.loads(run("keys", "list", DATABASE_URL=database_url).stdout)["keys"]
    }
    assert listed[created["id"]]["modes"] == ["fps-*", "chess"]
    headers = {"Authorization": f"Bearer {created['key']}"}
    refused = await client.get("/v1/leaderboards/go", headers=headers)
    assert refused.status_code == 403 and "'go' is not one" in refused.json()["detail"]


@pytest.mark.parametrize("modes", ["fps-**", "has space", "*", ","])
def test_malformed_modes_are_one_line(modes: str) -> None:
    line = failure_line(run("keys", "create", "--name", "x", "--scopes", "read", "--modes", modes), 2)
    assert line.startswith("error: --modes: ")


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


def first_serve_output(env: dict[str, str], terminal: bool) -> str:
    """What `serve` writes on stdout, a terminal or a pipe, up to its "Serving on" line."""
    reader, writer = pty.openpty() if terminal else os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve"], env=env, stdout=writer, stderr=subprocess.DEVNULL
    )
    os.close(writer)
    text = ""
    deadline = time.monotonic() + 120
    try:
        while "Serving on" not in text:
            assert process.poll() is None and time.monotonic() < deadline, text
            if select.select([reader], [], [], 1)[0]:
                text += os.read(reader, 4096).decode()
    finally:
        process.terminate()
        # Read on while it stops: a terminal's buffer is small, and a process whose next line
        # finds it full blocks there and never exits.
        stop = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < stop:
            if select.select([reader], [], [], 0.2)[0]:
                try:
                    os.read(reader, 4096)
                except OSError:  # the terminal's other side closed
                    break
        process.wait(max(1.0, stop - time.monotonic()))
        os.close(reader)
    return text


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "redirected"])
def test_the_generated_admin_key_goes_to_a_terminal_and_never_into_a_log(
    make_database, redis_url: str, tmp_path: Path, terminal: bool
) -> None:  # type: ignore[no-untyped-def]
    database = make_database()
    env = {k: v for k, v in os.environ.items() if k != "ADMIN_API_KEY"}
    data_dir = tmp_path / "data"
    env |= {"DATABASE_URL": database, "REDIS_URL": redis_url, "DATA_DIR": str(data_dir)}
    env |= {"PORT": str(free_port()), "LOG_LEVEL": "WARNING"}
    output = first_serve_output(env, terminal)
    key_file = data_dir / BOOTSTRAP_KEY_FILE
    if terminal:
        shown = re.search(r"Bootstrap admin API key \(shown once, store it now\): (ssk_\S+)", output)
        assert shown is not None, output
        key = shown.group(1)
        assert not key_file.exists()
    else:
        assert f"Bootstrap admin API key written to {key_file} (readable by its owner only)" in output
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        key = key_file.read_text().strip()
        assert key.startswith("ssk_") and key not in output
    with psycopg.connect(database) as conn:
        stored = conn.execute("SELECT key_hash, scopes FROM api_keys WHERE bootstrap").fetchall()
    assert stored == [(hashlib.sha256(key.encode()).hexdigest(), ["admin"])]
    # A second start generates nothing and writes nothing.
    key_file.unlink(missing_ok=True)
    assert "Bootstrap admin API key" not in first_serve_output(env, terminal)
    assert not key_file.exists()
