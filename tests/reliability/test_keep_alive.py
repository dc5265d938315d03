"""An idle client connection stays open longer than a client pool keeps it (httpx: 5 s), so the
client, not the service, closes it: a request the client sends on it is never reset unanswered
as the service closes it (app/cli.py, serve, says why)."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from tests.reliability.process import Service

pytestmark = pytest.mark.reliability

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def answer(sock: socket.socket) -> bytes:
    """One response's head and body (the body's length from Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the service closed the connection: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the service closed the connection mid-body"
        body += chunk
    return head


def test_an_idle_connection_outlives_a_client_pools_expiry(service_url: str, redis_url: str) -> None:
    idle = httpx.Limits().keepalive_expiry
    assert idle is not None
    with (
        Service(service_url, redis_url) as service,
        socket.create_connection(("127.0.0.1", service.port)) as sock,
    ):
        sock.settimeout(30)
        sock.sendall(REQUEST)
        assert answer(sock).startswith(b"HTTP/1.1 200")
        time.sleep(idle + 1)  # uvicorn's own default (5 s) would have closed it by now
        sock.sendall(REQUEST)
        assert answer(sock).startswith(b"HTTP/1.1 200")
