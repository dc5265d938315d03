"""problem+json (RFC 9457) for every error, including validation errors and unknown routes."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.errors import AppError

log = logging.getLogger(__name__)

PROBLEM = "application/problem+json"


def problem(
    status: int,
    detail: str,
    request: Request | None = None,
    *,
    title: str | None = None,
    headers: dict[str, str] | None = None,
    errors: list[dict[str, Any]] | None = None,
) -> JSONResponse:
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.url.path if request is not None else None,
    }
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM)


def _clean_errors(errors: Any) -> list[dict[str, Any]]:
    return [
        {"loc": list(e.get("loc", [])), "msg": str(e.get("msg", "invalid")), "type": e.get("type")}
        for e in errors
    ]


def install(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def app_error(request: Request, exc: AppError) -> JSONResponse:
        return problem(
            exc.status, exc.detail, request, title=exc.title, headers=exc.headers, errors=exc.errors
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _clean_errors(exc.errors())
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        detail = f"{where}: {first['msg']}" if where else str(first["msg"])
        return problem(422, detail, request, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail: str = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no route {request.method} {request.url.path}"
        return problem(exc.status_code, detail, request, headers=getattr(exc, "headers", None))

    @app.exception_handler(OperationalError)
    async def database_down(request: Request, exc: OperationalError) -> JSONResponse:
        log.warning("database unavailable: %s", exc.__class__.__name__)
        return problem(
            503, "the database is unavailable; retry shortly", request, headers={"Retry-After": "2"}
        )

    @app.exception_handler(DBAPIError)
    async def database_error(request: Request, exc: DBAPIError) -> JSONResponse:
        if exc.connection_invalidated:
            return problem(
                503, "the database connection was lost; retry shortly", request, headers={"Retry-After": "2"}
            )
        log.exception("database error")
        return problem(500, "internal error", request)

    @app.exception_handler(RedisError)
    async def redis_down(request: Request, exc: RedisError) -> JSONResponse:
        log.warning("redis unavailable: %s", exc.__class__.__name__)
        return problem(
            503, "the queue store is unavailable; retry shortly", request, headers={"Retry-After": "2"}
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error")
        return problem(500, "internal error", request)
