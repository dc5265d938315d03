"""A real PgBouncer (Debian's `pgbouncer`) in transaction pooling, in front of a PostgreSQL
server, on a free loopback port: for the test fixtures and bench/api_matches.py.

The settings are the ones docs/operations.md's "Behind PgBouncer" asks of production: pool_mode =
transaction and nothing ignored among the startup parameters (so a client that still sent
`options` would be refused, as in production).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict

INSTALL_HINT = "pgbouncer is not installed (Debian: apt-get install pgbouncer; `make test` installs it)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _quoted(value: str) -> str:
    """A value for a [databases] connection string (libpq quoting)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PgBouncer:
    """`start()` runs pgbouncer in front of `server_url`'s server; `url(database)` names a
    database through it; `stop()` ends it."""

    def __init__(self, server_url: str, workdir: Path, pool_size: int = 20) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.pool_size = pool_size
        self.process: subprocess.Popen[bytes] | None = None
        info = conninfo_to_dict(server_url)
        self.user = str(info.get("user") or "postgres")
        self._password = str(info.get("password") or "")
        self._server = {
            "host": str(info.get("host") or "/var/run/postgresql"),
            "port": str(info.get("port") or 5432),
        }

    def url(self, database: str) -> str:
        auth = quote(self.user, safe="")
        if self._password:
            auth += ":" + quote(self._password, safe="")
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{quote(database, safe='')}"

    def _config(self) -> Path:
        self.workdir.mkdir(parents=True, exist_ok=True)
        users = self.workdir / "users.txt"
        # trust: pgbouncer checks no password, but the user must be listed.
        users.write_text(f'"{self.user}" ""\n')
        # Any database name goes to the same server, as the same user (with its password).
        target = f"host={_quoted(self._server['host'])} port={self._server['port']} user={_quoted(self.user)}"
        if self._password:
            target += f" password={_quoted(self._password)}"
        lines = [
            "[databases]",
            f"* = {target}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {users}",
            "pool_mode = transaction",
            "max_client_conn = 1000",
            f"default_pool_size = {self.pool_size}",
            "log_connections = 0",
            "log_disconnections = 0",
        ]
        if os.geteuid() == 0:
            # pgbouncer refuses to run as root; it reads this file first, then drops to `user`.
            lines.append(f"user = {_unprivileged_user(self._server['host'])}")
        path = self.workdir / "pgbouncer.ini"
        path.write_text("\n".join(lines) + "\n")
        return path

    def start(self, seconds: float = 15.0) -> PgBouncer:
        binary = shutil.which("pgbouncer") or next(
            (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(p).exists()), None
        )
        if binary is None:
            raise RuntimeError(INSTALL_HINT)
        config = self._config()
        log = (self.workdir / "pgbouncer.log").open("wb")
        self.process = subprocess.Popen([binary, str(config)], stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + seconds
        while True:
            try:
                with psycopg.connect(self.url("postgres"), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return self
            except psycopg.Error as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    log_path = self.workdir / "pgbouncer.log"
                    raise RuntimeError(f"pgbouncer did not start: {exc}; see {log_path}") from exc
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def _unprivileged_user(host: str) -> str:
    """Who pgbouncer runs as under root: the owner of the server's socket directory (it can
    reach the socket), else postgres or nobody (a TCP server)."""
    if host.startswith("/") and Path(host).exists():
        owner = Path(host).stat().st_uid
        if owner != 0:
            return pwd.getpwuid(owner).pw_name
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("no unprivileged user (postgres or nobody) for pgbouncer to run as")
