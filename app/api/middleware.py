"""Pure ASGI middleware: request ids, access logs, latency metrics and body limits."""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.logs import request_id

log = logging.getLogger("app.access")

REQUEST_LATENCY = Histogram(
    "http_request_duration_seconds",
    "Request latency by route",
    ["method", "route", "status"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
REQUESTS = Counter("http_requests_total", "Requests by route and status", ["method", "route", "status"])

_VALID_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


class RequestContext:
    """Accept or make X-Request-ID, echo it, log the request, time it by route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = incoming if _VALID_ID.match(incoming) else uuid.uuid4().hex
        token = request_id.set(rid)
        started = time.perf_counter()
        status_holder: dict[str, Any] = {"status": 500}

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_holder["status"] = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                message["headers"] = headers
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = _route_of(scope)
            status = str(status_holder["status"])
            REQUEST_LATENCY.labels(scope["method"], route, status).observe(elapsed)
            REQUESTS.labels(scope["method"], route, status).inc()
            log.info(
                "%s %s %s %.1fms",
                scope["method"],
                scope["path"],
                status,
                elapsed * 1000,
                extra={
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": int(status),
                    "duration_ms": round(elapsed * 1000, 2),
                },
            )
            request_id.reset(token)


class BodyLimit:
    """413 problem+json for bodies over the limit, before the app reads them."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _too_large(scope, send, self.max_bytes)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    # Rendered as problem+json by the HTTPException handler.
                    raise HTTPException(413, f"request body exceeds {self.max_bytes} bytes")
            return message

        await self.app(scope, limited_receive, send)


async def _too_large(scope: Scope, send: Send, limit: int) -> None:
    body = json.dumps(
        {
            "type": "about:blank",
            "title": "Content Too Large",
            "status": 413,
            "detail": f"request body exceeds {limit} bytes",
            "instance": scope["path"],
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
