"""The embedded default keeps its data between runs, and each process stops only what it
is responsible for (app/infra/embedded.py says who that is)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from redis import Redis

from app.infra.embedded import (
    OWNER_FILE,
    EmbeddedServers,
    EmbeddedUnavailable,
    postgres_pid,
    running_redis,
    server_pids,
)

START_SERVERS = (
    "import sys; from pathlib import Path; from app.infra.embedded import EmbeddedServers; "
    "servers = EmbeddedServers(Path(sys.argv[1])); servers.start_postgres(); servers.start_redis()"
)


def test_second_start_reuses_the_data(data_dir: Path) -> None:
    first = EmbeddedServers(data_dir)
    url = first.start_postgres()
    redis_url = first.start_redis()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    left_open = Redis.from_url(redis_url)  # a client still connected must not keep the server alive
    left_open.set("kept", "yes")
    pids = server_pids(data_dir)
    assert len(pids) == 2
    first.stop()
    assert not psycopg_alive(url)
    assert not any(alive(pid) for pid in pids)
    assert server_pids(data_dir) == []

    second = EmbeddedServers(data_dir)
    url2 = second.start_postgres()
    redis_url2 = second.start_redis()
    try:
        assert postgres_pid(data_dir) not in pids
        with psycopg.connect(url2) as conn:
            assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
        assert Redis.from_url(redis_url2).get("kept") == b"yes"
    finally:
        second.stop()


def test_a_guest_never_stops_servers_it_found_running(data_dir: Path) -> None:
    started = EmbeddedServers(data_dir)
    started.start_postgres()
    started.start_redis()
    try:
        pids = server_pids(data_dir)
        assert len(pids) == 2
        guest = EmbeddedServers(data_dir)
        url = guest.start_postgres()
        redis_url = guest.start_redis()
        assert server_pids(data_dir) == pids  # the same servers, not new ones
        guest.stop()
        assert all(alive(pid) for pid in pids)
        with psycopg.connect(url, connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert Redis.from_url(redis_url).ping()
    finally:
        started.stop()
    assert not any(alive(pid) for pid in pids)


def test_the_owner_adopts_what_it_finds_and_stops_it(data_dir: Path) -> None:
    # A guest starts the servers; an owner then takes the directory over: from then on the
    # guest leaves them running, and the owner stops them.
    guest = EmbeddedServers(data_dir)
    guest.start_postgres()
    owner = EmbeddedServers(data_dir, owner=True)
    owner.start_postgres()
    owner.start_redis()
    pids = server_pids(data_dir)
    assert len(pids) == 2
    assert (data_dir / OWNER_FILE).read_text().strip() == str(os.getpid())
    guest.stop()
    assert all(alive(pid) for pid in pids)
    owner.stop()
    assert not any(alive(pid) for pid in pids)
    assert not (data_dir / OWNER_FILE).exists()
    assert running_redis(data_dir) is None


@pytest.fixture
def unreaped(data_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The embedded servers of `data_dir`, started under a parent that never reaps them
    (tests/infra/reaper.py): killed, they stay zombies while the test runs."""
    reaper = subprocess.Popen(
        [sys.executable, "-m", "tests.infra.reaper", sys.executable, "-c", START_SERVERS, str(data_dir)]
    )
    try:
        deadline = time.monotonic() + 120
        while len(server_pids(data_dir)) < 2:
            assert reaper.poll() is None and time.monotonic() < deadline, "the servers did not start"
            time.sleep(0.1)
        yield reaper
    finally:
        reaper.kill()  # its zombies go to init, which reaps them
        reaper.wait(10)


def test_zombies_of_killed_servers_are_replaced_and_the_data_kept(
    data_dir: Path, unreaped: subprocess.Popen[bytes]
) -> None:
    guest = EmbeddedServers(data_dir)
    with psycopg.connect(guest.start_postgres(), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS crashed (v int)")
        conn.execute("INSERT INTO crashed VALUES (7)")
    Redis.from_url(guest.start_redis()).set("crashed", "kept")
    killed = server_pids(data_dir)
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    for pid in killed:
        process = psutil.Process(pid)
        while process.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)
        assert process.ppid() == unreaped.pid  # nobody will reap it while the test runs
    assert server_pids(data_dir) == []

    restarted = EmbeddedServers(data_dir, wait_s=60)
    try:
        url = restarted.start_postgres()
        redis_url = restarted.start_redis()
        assert set(server_pids(data_dir)).isdisjoint(killed) and len(server_pids(data_dir)) == 2
        assert all(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE for pid in killed)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT v FROM crashed").fetchall() == [(7,)]
        assert Redis.from_url(redis_url).get("crashed") == b"kept"
    finally:
        restarted.stop()
    assert server_pids(data_dir) == []


def test_a_server_that_does_not_answer_gets_the_wait_then_a_failure(data_dir: Path) -> None:
    started = EmbeddedServers(data_dir)
    started.start_postgres()
    pid = postgres_pid(data_dir)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # alive, listening, answering nothing
    try:
        with pytest.raises(EmbeddedUnavailable, match=r"did not answer within 1s \(DB_CONNECT_WAIT_S"):
            EmbeddedServers(data_dir, wait_s=1).start_postgres()
        assert postgres_pid(data_dir) == pid  # adopted and waited for, never replaced

        # One that answers within the wait is adopted.
        threading.Timer(1.0, os.kill, (pid, signal.SIGCONT)).start()
        adopted = EmbeddedServers(data_dir, wait_s=120)
        with psycopg.connect(adopted.start_postgres(), connect_timeout=5) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert postgres_pid(data_dir) == pid
    finally:
        os.kill(pid, signal.SIGCONT)
        started.stop()
    assert server_pids(data_dir) == []


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def psycopg_alive(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False
