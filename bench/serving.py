"""The service as `make run` runs it, for the HTTP benchmarks: `python -m app serve` with
embedded PostgreSQL and Redis under a temp DATA_DIR, a fresh admin key, stopped at the end."""

from __future__ import annotations

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
    pid: int = 0  # the service's process (with WORKERS=1, the one serving)

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
