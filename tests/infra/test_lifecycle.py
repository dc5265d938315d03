"""Who stops the embedded servers, with real processes: `serve` owns those of its DATA_DIR and
stops them on SIGTERM or SIGINT; CLI commands beside it use them and never stop them; after a
SIGKILL the next serve adopts the orphans; a CLI command alone stops what it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from app.infra.embedded import OWNER_FILE, server_pids
from tests.conftest import ADMIN_KEY
from tests.reliability.process import ADMIN, free_port
from tests.reliability.process import serve as serve_ready

pytestmark = pytest.mark.reliability


def environment(data_dir: Path, port: int, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return {
        **env,
        "DATA_DIR": str(data_dir),
        "HOST": "127.0.0.1",
        "PORT": str(port),
        "ADMIN_API_KEY": ADMIN_KEY,
        "LOG_LEVEL": "WARNING",
        "RATE_LIMIT_PER_S": "0",
        **settings,
    }


def serve(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return serve_ready(env, f"http://127.0.0.1:{env['PORT']}/readyz", 120)


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=120
    )


def leftovers(data_dir: Path) -> list[str]:
    """Live processes started from or working in DATA_DIR (the servers and their children)."""
    found = []
    for process in psutil.process_iter(["cmdline", "cwd", "status"]):
        info = process.info
        if info["status"] == psutil.STATUS_ZOMBIE:
            continue
        text = " ".join(info["cmdline"] or []) + " " + (info["cwd"] or "")
        if str(data_dir) in text:
            found.append(f"{process.pid} {text}")
    return found


def stop(process: subprocess.Popen[bytes], number: int) -> int:
    process.send_signal(number)
    try:
        return process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"serve did not exit after signal {number}") from None


def test_cli_beside_a_live_serve_then_sigterm(data_dir: Path) -> None:
    env = environment(data_dir, free_port())
    base = f"http://127.0.0.1:{env['PORT']}"
    service = serve(env)
    try:
        assert (data_dir / OWNER_FILE).read_text().strip() == str(service.pid)
        servers = server_pids(data_dir)
        assert len(servers) == 2
        assert httpx.put(f"{base}/v1/modes/duel", json={}, headers=ADMIN).status_code in (200, 201)
        queued = httpx.post(f"{base}/v1/queues/duel/tickets", json={"players": ["ann"]}, headers=ADMIN)
        assert queued.status_code == 201, queued.text

        created = cli(env, "keys", "create", "--name", "ops", "--scopes", "read,matchmaking")
        assert created.returncode == 0, created.stderr
        assert created.stderr.splitlines()[0] == f"database: embedded in DATA_DIR {data_dir}"
        key = json.loads(created.stdout)
        listed = cli(env, "keys", "list")
        assert listed.returncode == 0, listed.stderr
        rows = {row["id"]: row for row in json.loads(listed.stdout)["keys"]}
        assert rows[key["id"]]["scopes"] == ["read", "matchmaking"]
        assert rows[key["id"]]["revoked_at"] is None
        assert key["key"] not in listed.stdout and all("key" not in row for row in rows.values())
        migrated = cli(env, "migrate")
        assert migrated.returncode == 0, migrated.stderr

        # The commands used the live servers and left them running: the same processes, the
        # ticket still in Redis, the service ready, and the new key working at once.
        assert server_pids(data_dir) == servers
        assert httpx.get(f"{base}/readyz").status_code == 200
        headers = {"Authorization": f"Bearer {key['key']}"}
        stats = httpx.get(f"{base}/v1/queues/duel", headers=headers)
        assert stats.status_code == 200, stats.text
        assert stats.json()["tickets"] == 1

        revoked = cli(env, "keys", "revoke", key["id"])
        assert revoked.returncode == 0, revoked.stderr
        # The service caches a key for a few seconds (app/auth/service.py).
        deadline = time.monotonic() + 30
        while httpx.get(f"{base}/v1/queues/duel", headers=headers).status_code != 401:
            assert time.monotonic() < deadline, "the revoked key still works"
            time.sleep(0.5)
        assert server_pids(data_dir) == servers
    finally:
        status = stop(service, signal.SIGTERM)
    assert status == 0
    assert leftovers(data_dir) == []
    assert not (data_dir / OWNER_FILE).exists()


def test_sigkill_orphans_are_adopted_and_a_cli_alone_stops_its_own(data_dir: Path) -> None:
    env = environment(data_dir, free_port())
    killed = serve(env)
    killed.kill()
    killed.wait(30)
    orphans = server_pids(data_dir)
    assert len(orphans) == 2
    # A CLI command uses the orphans and leaves them running.
    listed = cli(env, "keys", "list")
    assert listed.returncode == 0, listed.stderr
    assert server_pids(data_dir) == orphans

    # The next serve (several workers this time) adopts them, and stops them on SIGINT.
    adopter = serve({**env, "WORKERS": "2"})
    try:
        assert (data_dir / OWNER_FILE).read_text().strip() == str(adopter.pid)
        assert server_pids(data_dir) == orphans
    finally:
        status = stop(adopter, signal.SIGINT)
    assert status == 0
    assert leftovers(data_dir) == []

    # With nothing running, a CLI command starts the servers it needs and stops them again;
    # here a new admin key, as when the old one is lost.
    created = cli(env, "keys", "create", "--name", "lost admin", "--scopes", "admin")
    assert created.returncode == 0, created.stderr
    assert leftovers(data_dir) == []
    listed = cli(env, "keys", "list")
    assert json.loads(created.stdout)["id"] in {row["id"] for row in json.loads(listed.stdout)["keys"]}
    assert leftovers(data_dir) == []
