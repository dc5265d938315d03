"""The embedded default keeps its data between runs and stops what it started."""

from __future__ import annotations

from pathlib import Path

import psutil
import psycopg
from redis import Redis

from app.infra.embedded import EmbeddedServers


def test_second_start_reuses_the_data(tmp_path: Path) -> None:
    first = EmbeddedServers(tmp_path)
    url = first.start_postgres()
    redis_url = first.start_redis()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (v int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    left_open = Redis.from_url(redis_url)  # a client still connected must not keep the server alive
    left_open.set("kept", "yes")
    pid = first._postgres.get_pid()
    redis_pid = first._redis.pid
    first.stop()
    assert not psycopg_alive(url)
    assert not psutil.pid_exists(redis_pid) or psutil.Process(redis_pid).status() == psutil.STATUS_ZOMBIE

    second = EmbeddedServers(tmp_path)
    url2 = second.start_postgres()
    redis_url2 = second.start_redis()
    try:
        assert second._postgres.get_pid() != pid
        with psycopg.connect(url2) as conn:
            assert conn.execute("SELECT v FROM kept").fetchone() == (42,)
        assert Redis.from_url(redis_url2).get("kept") == b"yes"
    finally:
        second.stop()


def psycopg_alive(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False
