"""problem+json (RFC 9457) for every error, including validation errors and unknown routes."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic_core import to_json
from redis.exceptions import RedisClusterException, RedisError
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import AppError, ValidationFailed, title_of
from app.infra.redis_client import closed_under_command
from app.schemas import Problem

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


def problem(
    status: int,
    detail: str,
    request: Request | None = None,
    *,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> Response:
    content = problem_json(status, detail, request.url.path if request is not None else None, errors)
    return Response(content, status_code=status, headers=headers, media_type=PROBLEM)


def problem_json(
    status: int, detail: str, instance: str | None, errors: list[dict[str, Any]] | None = None
) -> bytes:
    """The one wire form of a problem answer: compact JSON (as every answer of the service),
    whichever layer answers (a handler, the body-checking middleware)."""
    return to_json(problem_body(status, detail, instance, errors))


def problem_body(
    status: int, detail: str, instance: str | None, errors: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A problem's members (app.schemas.Problem): the response body, or one item of a batch's answer."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title_of(status),
        "status": status,
        "detail": detail,
        "instance": instance,
    }
    if errors is not None:
        body["errors"] = errors
    return body


def validation_failed(errors: Any) -> ValidationFailed:
    """pydantic's errors as the 422 the service answers: the first error in the detail, all
    of them in `errors`."""
    cleaned = _clean_errors(errors)
    first = cleaned[0] if cleaned else {"loc": [], "msg": "invalid request"}
    where = ".".join(str(part) for part in first["loc"])
    return ValidationFailed(f"{where}: {first['msg']}" if where else str(first["msg"]), errors=cleaned)


# Seconds a client should wait before retrying when PostgreSQL or Redis is unavailable.
RETRY_AFTER_S = 2


def unavailable(detail: str, request: Request) -> Response:
    """503 for a store that is down or whose connection was lost: worth a retry, after a pause."""
    return problem(503, detail, request, headers={"Retry-After": str(RETRY_AFTER_S)})


def _database_problem(request: Request, error: BaseException | None, lost: bool) -> Response:
    """A database error as problem+json: a value PostgreSQL cannot hold is the client's input
    (422), a lost connection is worth a retry (503), anything else is ours (500)."""
    if isinstance(error, psycopg.DataError):
        # A value PostgreSQL cannot hold that validation let through: the client's input.
        log.warning("rejected value: %s", error.__class__.__name__)
        return problem(422, f"a value cannot be stored: {str(error).splitlines()[0]}", request)
    if lost:
        return unavailable("the database connection was lost; retry shortly", request)
    log.exception("database error")
    return problem(500, "internal error", request)


def _clean_errors(errors: Any) -> list[dict[str, Any]]:
    return [
        {"loc": list(e.get("loc", [])), "msg": str(e.get("msg", "invalid")), "type": e.get("type")}
        for e in errors
    ]


def install(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def app_error(request: Request, exc: AppError) -> Response:
        return problem(exc.status, exc.detail, request, headers=exc.headers, errors=exc.errors)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        failed = validation_failed(exc.errors())
        return problem(422, failed.detail, request, errors=failed.errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail: str = exc.detail if isinstance(exc.detail, str) else title_of(exc.status_code)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405 and detail == "Method Not Allowed":
            allowed = (exc.headers or {}).get("Allow", "")
            detail = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
        return problem(exc.status_code, detail, request, headers=getattr(exc, "headers", None))

    @app.exception_handler(OperationalError)
    async def database_down(request: Request, exc: OperationalError) -> Response:
        # The driver's error and its SQLSTATE tell a lost server from a statement timeout or a
        # deadlock; never the statement or its parameters (a player's id).
        orig = exc.orig
        log.warning(
            "database unavailable: %s (SQLSTATE %s)", type(orig).__name__, getattr(orig, "sqlstate", None)
        )
        return unavailable("the database is unavailable; retry shortly", request)

    # Every pooled connection busy for the pool's whole timeout: the service is overloaded,
    # and the request is worth a retry after a pause.
    @app.exception_handler(PoolTimeout)
    async def pool_exhausted(request: Request, exc: PoolTimeout) -> Response:
        log.warning("no database connection free within the pool timeout")
        return unavailable("the database is busy; retry shortly", request)

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> Response:
        return _database_problem(request, exc.orig, exc.connection_invalidated)

    # The match hot path runs on a psycopg connection (app.matches.repository), so its
    # errors arrive unwrapped: the same answers.
    @app.exception_handler(psycopg.Error)
    async def driver_error(request: Request, exc: psycopg.Error) -> Response:
        return _database_problem(
            request, exc, isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))
        )

    # A cluster's SlotNotCoveredError (a failed master's slots before its replica takes them
    # over) is no RedisError: the same answer.
    @app.exception_handler(RedisError)
    @app.exception_handler(RedisClusterException)
    async def redis_down(request: Request, exc: Exception) -> Response:
        log.warning("redis unavailable: %s", exc.__class__.__name__)
        return unavailable("the queue store is unavailable; retry shortly", request)

    # The errors redis-py lets through when the cluster client closes a connection under a
    # command (app.infra.redis_client.closed_under_command). Handled here, by class, rather than
    # only by the catch-all below: Starlette re-raises what the catch-all handles, and the
    # server then drops the connection instead of sending the 503.
    @app.exception_handler(RuntimeError)
    @app.exception_handler(AttributeError)
    async def closed_or_ours(request: Request, exc: Exception) -> Response:
        if closed_under_command(exc):
            return await redis_down(request, exc)
        log.error("unhandled error", exc_info=exc)
        return problem(500, "internal error", request)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        if closed_under_command(exc):
            return await redis_down(request, exc)
        log.exception("unhandled error")
        return problem(500, "internal error", request)


_KEYED = {
    "401": "Missing, unknown or revoked API key",
    "403": "The key lacks the scope this operation needs",
    "429": (
        "The key is over its request rate, or the client address over its failed "
        "authentications (see Retry-After)"
    ),
}
_ALWAYS = {
    "404": "Unknown route or resource",
    "422": "A parameter or the body fails validation",
    "503": "PostgreSQL or Redis is unavailable (see Retry-After)",
}
_WITH_BODY = {
    "400": (
        "The body is not UTF-8 JSON, is nested too deeply, or holds NaN, Infinity, "
        "an out-of-range number or a NUL character"
    ),
    "413": "The body is over the size limit",
    "415": "The body is not application/json",
}


# Statuses answered with a Retry-After (whole seconds): worth sending again after it.
_RETRIED = ("429", "503")
_RETRY_AFTER = {
    "description": "seconds to wait before sending the request again",
    "required": True,
    "schema": {"type": "integer", "minimum": 0},
}


def document(app: FastAPI) -> None:
    """Declare the problem+json errors on every operation of the OpenAPI document."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = FastAPI.openapi(app)  # builds and caches the plain document; amended in place
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        # Problem and FieldError, unless a schema that embeds them (BatchItemOut) brought them.
        problem = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in problem.pop("$defs", {}).items():
            components.setdefault(name, definition)
        components.setdefault("Problem", problem)
        for path, item in schema["paths"].items():
            for operation in item.values():
                statuses: dict[str, str] = {}
                if path.startswith("/v1/"):
                    statuses |= _KEYED | _ALWAYS
                    if "requestBody" in operation:
                        statuses |= _WITH_BODY
                responses = operation["responses"]
                for status, description in statuses.items():
                    known = responses.get(status, {})
                    responses[status] = {
                        "description": known.get("description", description)
                        if status != "422"
                        else description,
                        "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}},
                    }
                for status, response in responses.items():
                    if status[0] in "45" and "content" not in response:
                        response["content"] = {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
                    if status in _RETRIED:
                        response["headers"] = {"Retry-After": _RETRY_AFTER}
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
