"""`serve` with several workers: a listening socket per worker, connections spread over them,
a dead worker replaced on its own socket, and a clean stop."""

from __future__ import annotations

import os
import signal
import sys
import time

import httpx
import pytest

from tests.reliability.process import Service

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="SO_REUSEPORT spreading is Linux's"
)


def children(pid: int) -> list[int]:
    """The worker processes of `serve` (multiprocessing's resource tracker is a child too)."""
    with open(f"/proc/{pid}/task/{pid}/children") as listing:
        pids = [int(child) for child in listing.read().split()]
    workers = []
    for child in pids:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as command:
                if b"spawn_main" in command.read():
                    workers.append(child)
        except OSError:
            continue  # gone meanwhile
    return workers


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def tcp_sockets(port: int, state: str) -> dict[str, str]:
    """inode -> remote address of this machine's IPv4 TCP sockets on local `port` in `state`
    (0A listening, 01 established)."""
    found = {}
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port and fields[3] == state:
                found[fields[9]] = fields[2]
    return found


def wait_for(condition, seconds: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_each_worker_listens_on_its_own_socket_and_gets_a_share(database_url: str, redis_url: str) -> None:
    service = Service(database_url, redis_url, WORKERS="3").start()
    try:
        assert service.process is not None
        wait_for(lambda: len(children(service.process.pid)) == 3)  # type: ignore[union-attr]
        workers = children(service.process.pid)
        listening = tcp_sockets(service.port, "0A")
        assert len(listening) == 3
        # Each worker holds exactly one of them.
        assert sorted(len(socket_inodes(pid) & set(listening)) for pid in workers) == [1, 1, 1]

        # Thirty keep-alive connections opened at once: every worker is handed some (with
        # one shared socket, the first worker awake would take them all). The chance that a
        # fair hash leaves one of three workers without any is 3·(2/3)³⁰, about 2·10⁻⁵.
        clients = [httpx.Client(base_url=service.base) for _ in range(30)]
        try:
            for client in clients:
                assert client.get("/healthz").status_code == 200
            established = tcp_sockets(service.port, "01")
            shares = [len(socket_inodes(pid) & set(established)) for pid in workers]
            assert sum(shares) == 30 and min(shares) > 0, shares
        finally:
            for client in clients:
                client.close()

        # A worker killed outright is replaced, on its socket, and the service keeps answering.
        os.kill(workers[0], signal.SIGKILL)
        wait_for(lambda: len(set(children(service.process.pid)) - set(workers)) == 1)  # type: ignore[union-attr]
        # A request queued on the killed worker's socket waits there for the replacement to
        # start (longer than 2 s on a loaded machine): it is answered late, never dropped.
        wait_for(lambda: httpx.get(f"{service.base}/healthz", timeout=60).status_code == 200)
        assert tcp_sockets(service.port, "0A").keys() == listening.keys()

        # SIGTERM stops every worker and frees the port.
        service.process.terminate()
        assert service.process.wait(30) == 0
        assert tcp_sockets(service.port, "0A") == {}
    finally:
        service.stop()
