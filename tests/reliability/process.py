"""A real uvicorn process of the service, to kill, restart and run beside another."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

import httpx

from tests.conftest import ADMIN_KEY

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
# `make soak` sets SOAK=1: the same tests, run several times longer.
SOAK = os.environ.get("SOAK") == "1"


# Every service started, oldest first: tests/conftest.py attaches what they wrote during a test,
# and whether they still run, to that test's failure report (a dropped connection's cause is in
# the server's log, or in its exit status).
STARTED: list[Service] = []


def scaled(seconds: float) -> float:
    return seconds * 10 if SOAK else seconds


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(
    env: dict[str, str], ready: str, within: float, output: IO[bytes] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """`python -m app serve` with `env`, returned once `ready` answers 200; killed, and an
    AssertionError, if it exits or `within` seconds pass first. `output`, if given, takes its
    stdout and stderr. `cwd`, if given, is where it runs: `python -m` imports `app` from there
    first (another release's code, tests/reliability/test_upgrade.py)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "app", "serve"],
        env=env,
        cwd=cwd,
        stdout=output,
        stderr=None if output is None else subprocess.STDOUT,
    )
    deadline = time.monotonic() + within
    while True:
        try:
            if httpx.get(ready, timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            process.wait(10)
            raise AssertionError(f"serve did not answer {ready} within {within:g}s")
        time.sleep(0.1)


class Service:
    """One API process on the given database and Redis; `port` stays the same across restarts."""

    def __init__(
        self, database_url: str, redis_url: str, *, code: Path | None = None, **settings: str
    ) -> None:
        self.code = code  # another release's checkout to run instead of this one
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "ADMIN_API_KEY": ADMIN_KEY,
            "LOG_LEVEL": "WARNING",
            "DB_POOL_SIZE": "20",
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "RATE_LIMIT_PER_S": "0",
            # A crash in C code (uvloop, hiredis) leaves its traceback in the log, not silence.
            "PYTHONFAULTHANDLER": "1",
            **settings,
        }
        self.process: subprocess.Popen[bytes] | None = None
        # stdout and stderr go to a file (kept across restarts) rather than to pytest's capture,
        # which shows only the lines written while a failing test's own phase ran.
        handle, name = tempfile.mkstemp(prefix=f"service-{self.port}-", suffix=".log")
        os.close(handle)
        self.log = Path(name)

    def start(self, ready_within: float = 60.0) -> Service:
        # `serve` as operators run it: migrate, make sure the bootstrap key exists, then serve.
        if self not in STARTED:
            STARTED.append(self)
        try:
            with self.log.open("ab") as out:
                self.process = serve(self.env, f"{self.base}/healthz", ready_within, out, self.code)
        except AssertionError as failed:
            raise AssertionError(f"{failed}:\n{self.output()}") from None
        return self

    def output(self) -> str:
        """Everything the process wrote so far (all its starts)."""
        return self.log.read_text(errors="replace")

    def state(self) -> str:
        """Running, or how it ended (a negative status is the signal that ended it)."""
        code = None if self.process is None else self.process.poll()
        return "running" if self.process is not None and code is None else f"exited with status {code}"

    def kill(self) -> None:
        """kill -9: no shutdown hooks, no flushing, connections cut mid-request."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def __enter__(self) -> Service:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
