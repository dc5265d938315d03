"""POST /v1/matches, the service's busiest write, answered before the app's middleware stack.

Any other request crosses Starlette's middleware stack (its error and exception
middlewares, ours in app.api.middleware), the router's scan of the routes and FastAPI's
request handling (solving the route's dependencies, reading the body through its
generators). For a match post that was about a fifth of a worker's CPU (docs/benchmarks.md,
issue #23). MatchPosts answers the common case itself: a POST to exactly /v1/matches with
one Content-Type, application/json, a declared length within the limit, and a body that is
JSON. For it, it does what the stack does, in the same order and with the same code:

1. the request id, echoed; the latency metric by route and the access log, once answered
   (app.api.middleware's accepted_id and observed);
2. the body read and checked (RequestBody's checked_json);
3. the key (authorize: 401, 403, 429);
4. the body validated by the route's own body field, as FastAPI validates it;
5. the route's endpoint (app.api.matches.post_match), whose response is sent as it is.

An error at 3 to 5 is answered by the app's own exception handlers (the same problem+json).
Any other request for the route (another media type, no declared length, an empty or
oversized body, a body that is not JSON, a client gone before its body arrived) goes down
the stack with what was read of its body replayed, so those answers are the stack's own.
The route stays declared in app.api.matches: its OpenAPI, and the handler of what is passed
down.
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.deps import Resources, authorize
from app.api.matches import post_match, router
from app.api.middleware import accepted_id, checked_json, observed
from app.auth.keys import Scope as KeyScope
from app.logs import request_id

PATH = "/v1/matches"
_JSON = b"application/json"


class MatchPosts:
    """`stack`: the app's own handling, for what is passed down. `max_bytes`: the body limit
    (MAX_BODY_BYTES), as RequestBody applies it."""

    def __init__(self, app: FastAPI, stack: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.stack = stack
        self.max_bytes = max_bytes
        # The route as declared (app.api.matches): its path, its body field.
        self.route = next(
            route
            for route in router.routes
            if isinstance(route, APIRoute) and route.path == PATH and "POST" in (route.methods or ())
        )

    def takes(self, scope: Scope) -> bool:
        """Whether `scope` is a request for the route (its path as the router would match it)."""
        return (
            scope["type"] == "http"
            and scope["path"] == PATH
            and scope["method"] == "POST"
            and not scope.get("root_path")
            and not self.app.root_path
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()  # as RequestContext times it: the body's arrival counts
        raw = scope["headers"]
        media = [value for name, value in raw if name == b"content-type"]
        headers = dict(raw)
        declared = headers.get(b"content-length", b"")
        if media != [_JSON] or not declared.isdigit() or int(declared) > self.max_bytes:
            await self.stack(scope, receive, send)
            return
        received: list[Message] = []
        size = 0
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":  # gone: the stack answers as it would
                await self.stack(scope, _replay(received, receive), send)
                return
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self.stack(scope, _replay(received, receive), send)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(message.get("body", b"") for message in received)
        parsed, wrong = checked_json(body) if body.strip() else (None, "empty")
        if wrong is not None:
            await self.stack(scope, _replay(received, receive), send)
            return
        await self._answer(scope, headers, parsed, send, started)

    async def _answer(
        self, scope: Scope, headers: dict[bytes, bytes], body: Any, send: Send, started: float
    ) -> None:
        rid = accepted_id(headers)
        token = request_id.set(rid)
        status = 500

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        scope["app"] = self.app
        request = Request(scope)
        route = self.route
        try:
            try:
                res: Resources = self.app.state.resources
                key = await authorize(request, res, KeyScope.results_write)
                field = route.body_field
                assert field is not None
                values, errors = await request_body_to_args([field], body, embed_body_fields=False)
                if errors:
                    raise RequestValidationError(errors, body=body)
                response = await post_match(values[field.name], res, key)
            except Exception as exc:
                await self._problem(request, exc, scope, send, send_with_id)
                return
            await response(scope, _no_body, send_with_id)
        finally:
            observed(scope, route.path, status, time.perf_counter() - started)
            request_id.reset(token)

    async def _problem(
        self, request: Request, exc: Exception, scope: Scope, send: Send, send_with_id: Send
    ) -> None:
        """`exc` answered by the handler the stack would pick. The catch-all's answer (500)
        goes out, as Starlette's ServerErrorMiddleware sends it, from outside our request
        context (no X-Request-ID), and the error is raised on to the server, which logs it."""
        handlers = self.app.exception_handlers
        handler = handlers.get(exc.status_code) if isinstance(exc, HTTPException) else None
        for cls in type(exc).__mro__:
            if handler is not None:
                break
            if cls is not Exception:
                handler = handlers.get(cls)
        if handler is None:
            catch_all = handlers.get(Exception) or handlers.get(500)
            if catch_all is not None:
                await (await _answered(catch_all, request, exc))(scope, _no_body, send)
            raise exc
        await (await _answered(handler, request, exc))(scope, _no_body, send_with_id)


async def _answered(handler: Any, request: Request, exc: Exception) -> Response:
    """A handler's response (the app's handlers are coroutines; Starlette also allows plain functions)."""
    answer = handler(request, exc)
    response: Response = await answer if inspect.isawaitable(answer) else answer
    return response


def _replay(received: list[Message], receive: Receive) -> Receive:
    """`receive` with the messages already read handed out again first."""
    pending = list(received)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


async def _no_body() -> Message:  # pragma: no cover - a response never reads the request
    return {"type": "http.disconnect"}
