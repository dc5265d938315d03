"""The service as `make run` runs it, for the HTTP benchmarks: `python -m app serve` with
embedded PostgreSQL and Redis under a temp DATA_DIR, a fresh admin key, stopped at the end."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Served:
    base: str  # http://127.0.0.1:PORT
    key: str  # the admin key
    workdir: Path  # a temp dir, removed at the end
    socket_dir: str  # the embedded PostgreSQL's socket directory
    pid: int  # the `serve` process (with one worker, the process that answers)

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@/skillservice?host={self.socket_dir}"


def _wait_ready(base: str, process: subprocess.Popen[bytes], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("the service exited during start-up")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise SystemExit("the service did not become ready")


@contextmanager
def serving(name: str, workers: int = 1, **settings: str) -> Iterator[Served]:
    """Run the service until the block ends; `settings` are extra environment variables."""
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    os.chmod(workdir, 0o755)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    key = "bench-admin-key-" + secrets.token_hex(8)
    env = {
        **os.environ,
        "DATA_DIR": str(workdir / "data"),
        "PORT": str(port),
        "WORKERS": str(workers),
        "ADMIN_API_KEY": key,
        "LOG_LEVEL": "WARNING",
        # One key drives the whole load: measure the service, not the per-key limit.
        "RATE_LIMIT_PER_S": "0",
        **settings,
    }
    # Embedded servers unless the caller names one (the shell's own URLs never leak in).
    for name in ("DATABASE_URL", "REDIS_URL"):
        if name not in settings:
            env.pop(name, None)
    service = subprocess.Popen(
        [sys.executable, "-m", "app", "serve"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, service)
        yield Served(base, key, workdir, str((workdir / "data" / "postgres").resolve()), service.pid)
    finally:
        service.send_signal(signal.SIGINT)
        try:
            service.wait(30)
        except subprocess.TimeoutExpired:
            service.kill()
        shutil.rmtree(workdir, ignore_errors=True)


class RawHttp:
    """One keep-alive HTTP/1.1 connection over a plain socket, reading whole responses: the
    load generators' client, since they share the cores with the service and httpx would
    spend more CPU than it measures."""

    def __init__(self, base: str, key: str) -> None:
        self.host, port = base.removeprefix("http://").split(":")
        self.port = int(port)
        self.key = key

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        self.writer.close()

    async def __aenter__(self) -> RawHttp:
        await self.open()
        return self

    async def __aexit__(self, *_: object) -> None:
        self.close()
        await self.writer.wait_closed()

    async def request(
        self, method: str, path: str, body: bytes = b"", key: str | None = None
    ) -> tuple[int, bytes]:
        """(status, content) of one request, with this connection's key unless `key` is given."""
        self.writer.write(
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nAuthorization: Bearer {key or self.key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        status = int((await self.reader.readline()).split()[1])
        length = None
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise SystemExit(f"{method} {path}: a response without Content-Length")
        return status, await self.reader.readexactly(length)
