"""The embedded default keeps its data between runs, and each process stops only what it
is responsible for (app/infra/embedded.py says who that is)."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import psycopg
from redis import Redis

from app.infra.embedded import OWNER_FILE, EmbeddedServers, postgres_pid, running_redis, server_pids


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
