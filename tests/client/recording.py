"""Transports that note every send and its outcome, to see what the clients did on the wire.

They wrap the real transports (a socket, or the app in-process): the server is never faked.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

Sent = tuple[str, str, int | str]  # method, path, status or the error's class name


class RecordingTransport(httpx.HTTPTransport):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent: list[Sent] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = super().handle_request(request)
        except httpx.TransportError as error:
            self.sent.append((request.method, request.url.path, type(error).__name__))
            raise
        self.sent.append((request.method, request.url.path, response.status_code))
        return response


class RecordingAsyncTransport(httpx.AsyncHTTPTransport):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent: list[Sent] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await super().handle_async_request(request)
        except httpx.TransportError as error:
            self.sent.append((request.method, request.url.path, type(error).__name__))
            raise
        self.sent.append((request.method, request.url.path, response.status_code))
        return response


class RecordingASGITransport(httpx.ASGITransport):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.sent: list[Sent] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await super().handle_async_request(request)
        self.sent.append((request.method, request.url.path, response.status_code))
        return response


def route_of(routes: list[tuple[str, str]], method: str, path: str) -> tuple[str, str] | None:
    """The (method, route template) of openapi.json that a sent request matches."""
    for route_method, route in routes:
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(route))
        if route_method == method and re.fullmatch(pattern, path):
            return route_method, route
    return None
