"""Who stops the embedded servers, with real processes: `serve` owns those of its DATA_DIR and
stops them on SIGTERM or SIGINT; CLI commands beside it use them and never stop them; after a
SIGKILL the next serve adopts the orphans; a CLI command alone stops what it started. After a
SIGKILL of everything (the servers left zombies), the next serve starts at once and keeps every
acknowledged match; a server that does not answer gets DB_CONNECT_WAIT_S, then serve exits 1."""

from __future__ import annotations

import asyncio
import contextlib
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

from app.infra.embedded import OWNER_FILE, postgres_pid, running_redis, server_pids
from tests.conftest import ADMIN_KEY
from tests.reliability.process import ADMIN, free_port, scaled
from tests.reliability.process import serve as serve_ready
from tests.reliability.test_crash import CLIENTS, client_loop

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


def wait_ready(base: str, reaper: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert reaper.poll() is None and time.monotonic() < deadline, "serve did not start"
        time.sleep(0.1)


async def load_then_kill_everything(base: str, mode: str, data_dir: Path) -> dict[str, bytes]:
    """32 clients posting matches; once they all got answers, SIGKILL of serve, PostgreSQL and
    Redis together. Returns every acknowledged match with its answer."""
    acked: dict[str, bytes] = {}
    refused: list[str] = []
    stop = asyncio.Event()
    loops = [asyncio.create_task(client_loop(base, mode, c, acked, refused, stop)) for c in range(CLIENTS)]
    warm_until = time.monotonic() + 60
    while len(acked) < CLIENTS and not refused and time.monotonic() < warm_until:
        await asyncio.sleep(0.05)
    await asyncio.sleep(scaled(1.0))
    postmaster, redis = postgres_pid(data_dir), running_redis(data_dir)
    assert postmaster is not None and redis is not None
    for pid in (int((data_dir / OWNER_FILE).read_text()), postmaster, redis[0]):
        os.kill(pid, signal.SIGKILL)
    await asyncio.gather(*loops)
    assert not refused, refused
    assert len(acked) >= CLIENTS, "the load never got going"
    # The reaper never reaps: the postmaster stays a zombie, which the next serve must see through.
    assert psutil.Process(postmaster).status() == psutil.STATUS_ZOMBIE
    return acked


def test_sigkill_of_everything_then_serve_at_once_keeps_every_acknowledged_match(data_dir: Path) -> None:
    env = environment(data_dir, free_port())
    base = f"http://127.0.0.1:{env['PORT']}"
    mode = f"crash-{int(time.time() * 1000) % 10**9}"
    acked: dict[str, bytes] = {}
    reapers = []
    try:
        # Twice: the second crash hits a serve that itself started after a crash.
        for cycle in range(2):
            reaper = subprocess.Popen(
                [sys.executable, "-m", "tests.infra.reaper", sys.executable, "-m", "app", "serve"], env=env
            )
            reapers.append(reaper)
            wait_ready(base, reaper)
            created = httpx.put(f"{base}/v1/modes/{mode}-{cycle}", json={}, headers=ADMIN)
            assert created.status_code == 200, created.text
            acked |= asyncio.run(load_then_kill_everything(base, f"{mode}-{cycle}", data_dir))
        # At once, beside the zombies: a plain serve, as `make run` would start it.
        service = serve(env)
        try:
            with httpx.Client(base_url=base, headers=ADMIN, timeout=30) as http:
                for match_id, first_answer in acked.items():
                    stored = http.get(f"/v1/matches/{match_id}")
                    assert stored.status_code == 200, (match_id, stored.text)
                    assert {**stored.json(), "created": True} == httpx.Response(
                        200, content=first_answer
                    ).json()
        finally:
            assert stop(service, signal.SIGTERM) == 0
    finally:
        for reaper in reapers:
            # A serve still running (the test failed before the kill) goes with its reaper.
            for process in psutil.Process(reaper.pid).children():
                with contextlib.suppress(psutil.Error):
                    process.kill()
            reaper.kill()
            reaper.wait(10)
    assert leftovers(data_dir) == []


@pytest.mark.parametrize(
    ("server", "failure"),
    [
        ("postgres", "error: embedded PostgreSQL did not answer within 2s (DB_CONNECT_WAIT_S"),
        ("redis", "error: cannot reach Redis after 2s"),
    ],
)
def test_a_server_that_does_not_answer_gets_the_wait_then_serve_exits_1(
    data_dir: Path, server: str, failure: str
) -> None:
    env = environment(data_dir, free_port())
    migrated = cli(env, "migrate")  # starts PostgreSQL, and stops it again
    assert migrated.returncode == 0, migrated.stderr
    guest = subprocess.Popen(
        [sys.executable, "-c", "import sys; from pathlib import Path; from app.infra.embedded import "
         f"EmbeddedServers; EmbeddedServers(Path(sys.argv[1])).start_{server}()", str(data_dir)],
        env=env,
    )  # fmt: skip
    assert guest.wait(120) == 0
    running = postgres_pid(data_dir) if server == "postgres" else (running_redis(data_dir) or (None,))[0]
    assert running is not None
    os.kill(running, signal.SIGSTOP)  # alive, listening, answering nothing
    try:
        result = subprocess.run(
            [sys.executable, "-m", "app", "serve"],
            env={**env, "DB_CONNECT_WAIT_S": "2"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 1, result.stderr
        assert result.stderr.splitlines()[-1].startswith(failure), result.stderr
        assert "Traceback" not in result.stderr
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(running, signal.SIGCONT)
    # That serve adopted the server, so it stopped it on the way out; the next one starts.
    service = serve(env)
    assert stop(service, signal.SIGTERM) == 0
    assert leftovers(data_dir) == []
