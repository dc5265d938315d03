"""Worker processes for `serve`, each listening on its own socket.

uvicorn's own workers share one listening socket, and whichever process wakes first accepts
every connection then waiting: a client that opens its pool of keep-alive connections at
once (a game backend starting up, a load balancer) can land all of them on one worker while
the others idle. Here each worker listens on a socket of its own, all bound to the same
address with SO_REUSEPORT, and the kernel spreads new connections over them by hash.

The sockets are bound here, in the supervising process, before any worker starts: a worker
that dies leaves its socket listening, so its share of new connections waits for the
replacement rather than being refused. Workers are uvicorn's own worker processes (the same
health pings and signal handling as `uvicorn --workers`). That class is not uvicorn's public
API, so uvicorn is pinned exactly and tests/infra/test_uvicorn_pin.py checks what is used here.

Linux only; elsewhere (no SO_REUSEPORT load balancing) `serve` uses uvicorn's workers.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Process

log = logging.getLogger(__name__)


def supported() -> bool:
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


def listening_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A socket listening on (host, port) that shares the port with the other workers'."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def run(config: uvicorn.Config) -> None:
    """Serve with config.workers processes until SIGINT or SIGTERM; a worker that dies or
    stops answering its health ping is replaced on its own socket."""
    first = listening_socket(config.host, config.port, config.backlog)
    port = first.getsockname()[1]  # the port chosen, when config.port is 0
    sockets = [first] + [
        listening_socket(config.host, port, config.backlog) for _ in range(config.workers - 1)
    ]
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    workers = [Process(config, [sock]) for sock in sockets]
    for worker in workers:
        worker.start()
    try:
        while not stop.wait(0.5):
            for index, worker in enumerate(workers):
                if worker.is_alive(timeout=config.timeout_worker_healthcheck):
                    continue
                worker.kill()
                worker.join()
                if worker.exitcode == STARTUP_FAILURE:
                    # It failed before serving (the app cannot start): so would a replacement.
                    log.error("worker %s failed to start; stopping", worker.pid)
                    stop.set()
                    break
                log.warning("worker %s died; starting another", worker.pid)
                workers[index] = Process(config, [sockets[index]])
                workers[index].start()
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
        for sock in sockets:
            sock.close()
