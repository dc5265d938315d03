"""Pure ASGI middleware: request ids, access logs, latency metrics and request-body checks."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Any

from prometheus_client import Counter, Histogram
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import PROBLEM, problem_json
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


def _new_id() -> str:
    """A request id: what uuid.uuid4().hex gives (random, with the version 4 and variant
    bits), without building the UUID object."""
    raw = bytearray(os.urandom(16))
    raw[6] = raw[6] & 0x0F | 0x40
    raw[8] = raw[8] & 0x3F | 0x80
    return raw.hex()


# Each (method, route, status) series of the two metrics, looked up once (labels() takes a
# lock and checks the values on every call). Routes and statuses are few.
_SERIES: dict[tuple[str, str, str], tuple[Any, Any]] = {}


def _series(method: str, route: str, status: str) -> tuple[Any, Any]:
    key = (method, route, status)
    series = _SERIES.get(key)
    if series is None:
        series = _SERIES[key] = (REQUEST_LATENCY.labels(*key), REQUESTS.labels(*key))
    return series


def _route_of(scope: Scope) -> str:
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"


def _logged_path(scope: Scope, route: str) -> str:
    """The path as the access log writes it: a path that names a player is written as its
    route ("/v1/players/{player_id}"), so that no log keeps a player id the service may be
    asked to erase (app.erasure)."""
    return route if "{player_id}" in route else str(scope["path"])


def accepted_id(headers: dict[bytes, bytes]) -> str:
    """The request's id: the client's X-Request-ID when it is a valid one, else a new one."""
    incoming = headers.get(b"x-request-id", b"").decode("latin-1")
    return incoming if _VALID_ID.match(incoming) else _new_id()


def observed(scope: Scope, route: str, status: int, elapsed: float) -> None:
    """A finished request: its latency and count by route and status, and its access log line."""
    method = scope["method"]
    latency, count = _series(method, route, str(status))
    latency.observe(elapsed)
    count.inc()
    if log.isEnabledFor(logging.INFO):
        path = _logged_path(scope, route)
        log.info(
            "%s %s %s %.1fms",
            method,
            path,
            status,
            elapsed * 1000,
            extra={"method": method, "path": path, "status": status, "duration_ms": round(elapsed * 1000, 2)},
        )


class RequestContext:
    """Accept or make X-Request-ID, echo it, log the request, time it by route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = accepted_id(dict(scope["headers"]))
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
            observed(scope, _route_of(scope), status_holder["status"], time.perf_counter() - started)
            request_id.reset(token)


class RequestBody:
    """Reject bad request bodies before the app reads them, each with its own problem+json.

    - over `max_bytes` (declared or streamed): 413;
    - API writes (/v1/, POST/PUT/PATCH with a body) not sent as application/json: 415;
    - ... not UTF-8, not JSON, nested deeper than MAX_DEPTH, NaN/Infinity literals, or a
      number out of the float range: 400 naming the problem.

    JSON bodies are buffered (they are small and already bounded) and checked with the
    C decoder (checked_json).
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _problem(scope, send, 413, f"request body exceeds {self.max_bytes} bytes")
            return
        if scope["method"] in _WRITES and scope["path"].startswith("/v1/"):
            await self._checked_json(scope, receive, send, headers)
            return
        await self.app(scope, self._limited(receive), send)

    def _limited(self, receive: Receive) -> Receive:
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

        return limited_receive

    async def _checked_json(
        self, scope: Scope, receive: Receive, send: Send, headers: dict[bytes, bytes]
    ) -> None:
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await _problem(scope, send, 413, f"request body exceeds {self.max_bytes} bytes")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body.strip():
            media = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if media != b"application/json" and not media.endswith(b"+json"):
                shown = media.decode("latin-1") or "none"
                await _problem(
                    scope, send, 415, f"send the body as Content-Type: application/json, not {shown}"
                )
                return
            wrong = json_problem(body)
            if wrong is not None:
                await _problem(scope, send, 400, wrong)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


_WRITES = {"POST", "PUT", "PATCH"}
MAX_DEPTH = 32
MAX_INT_DIGITS = 300  # beyond any float: 1e308


class _NotJson(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not valid JSON; send a finite number")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _NotJson(f"the number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise _NotJson(f"an integer of {len(text)} digits is out of range (at most {MAX_INT_DIGITS})")
    return int(text)


def json_problem(body: bytes) -> str | None:
    """What is wrong with a JSON request body, or None when nothing is."""
    return checked_json(body)[1]


def checked_json(body: bytes) -> tuple[Any, str | None]:
    """A JSON request body parsed, and None; or None and what is wrong with it."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"the body is not UTF-8: invalid byte at position {exc.start}"
    # Depth first, by brackets outside strings, so a hostile body never reaches the decoder's
    # recursion. Most bodies have few brackets; this loop stays over a short list.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        return None, f"the JSON is nested deeper than {MAX_DEPTH} levels"
    if "\\u0000" in text and _NUL.search(text):
        return None, "strings may not contain the NUL character (\\u0000)"
    try:
        # The hooks refuse what json.loads would accept; what they return is what it returns.
        return json.loads(
            text, parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int
        ), None
    except _NotJson as exc:
        return None, str(exc)
    except RecursionError:
        return None, f"the JSON is nested deeper than {MAX_DEPTH} levels"
    except ValueError as exc:
        return None, f"the body is not valid JSON: {exc}"


# \u0000 not itself escaped (an odd run of backslashes before it).
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def _depth(text: str) -> int:
    """How deep the brackets outside strings nest (at least MAX_DEPTH + 1 once it is clear
    they go deeper). Each pass strips the innermost pairs in C, so a pass is one level."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = 0
    while brackets and depth <= MAX_DEPTH:
        brackets, peeled = _INNERMOST.subn("", brackets)
        if not peeled:  # unbalanced or crossed: not JSON; count the openers still nested
            return depth + _deepest_opening(brackets)
        depth += 1
    return depth


def _deepest_opening(brackets: str) -> int:
    depth = deepest = 0
    for bracket in brackets:
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
    return deepest


async def _problem(scope: Scope, send: Send, status: int, detail: str) -> None:
    body = problem_json(status, detail, scope["path"])
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
