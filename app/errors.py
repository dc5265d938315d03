"""One error hierarchy, rendered as RFC 9457 problem+json by one set of handlers."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

# The one source of problem titles. RFC 9110 names (§15): Python 3.11's http.HTTPStatus
# still says "Unprocessable Entity" and "Request Entity Too Large", so every status the
# service answers is spelled here, and nothing else picks a title.
TITLES: dict[int, str] = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    413: "Content Too Large",
    414: "URI Too Long",
    415: "Unsupported Media Type",
    416: "Range Not Satisfiable",
    422: "Unprocessable Content",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def title_of(status: int) -> str:
    """The problem title of an HTTP status (the table, else the standard reason phrase)."""
    title = TITLES.get(status)
    if title is not None:
        return title
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


class AppError(Exception):
    """An error a client can act on: a status (whose title is `TITLES`'s) and a detail sentence."""

    status = 500

    def __init__(
        self,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        errors: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = headers or {}
        self.errors = errors

    @property
    def title(self) -> str:
        return title_of(self.status)


class Unauthorized(AppError):
    status = 401

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(AppError):
    status = 403


class NotFound(AppError):
    status = 404


class UnknownMode(NotFound):
    """The 404 of a mode that does not exist, saying how to make it: every package that
    reads a mode raises it, so it lives here rather than in app.modes."""

    def __init__(self, name: str) -> None:
        super().__init__(f"mode {name!r} does not exist; create it with PUT /v1/modes/{name} (admin)")


class Conflict(AppError):
    status = 409


class ValidationFailed(AppError):
    status = 422


class TooManyRequests(AppError):
    status = 429


class ServiceUnavailable(AppError):
    """Something the answer needs is not ready yet (an ended season still being archived)."""

    status = 503

    def __init__(self, detail: str, retry_after: int = 2) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after)})
