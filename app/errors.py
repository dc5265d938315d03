"""One error hierarchy, rendered as RFC 9457 problem+json by one set of handlers."""

from __future__ import annotations

from typing import Any


class AppError(Exception):
    """An error a client can act on: status, a short title and a detail sentence."""

    status = 500
    title = "Internal Server Error"

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


class BadRequest(AppError):
    status, title = 400, "Bad Request"


class Unauthorized(AppError):
    status, title = 401, "Unauthorized"

    def __init__(self, detail: str) -> None:
        super().__init__(detail, headers={"WWW-Authenticate": "Bearer"})


class Forbidden(AppError):
    status, title = 403, "Forbidden"


class NotFound(AppError):
    status, title = 404, "Not Found"


class Conflict(AppError):
    status, title = 409, "Conflict"


class PayloadTooLarge(AppError):
    status, title = 413, "Content Too Large"


class UnsupportedMediaType(AppError):
    status, title = 415, "Unsupported Media Type"


class ValidationFailed(AppError):
    status, title = 422, "Unprocessable Content"


class TooManyRequests(AppError):
    status, title = 429, "Too Many Requests"


class ServiceUnavailable(AppError):
    status, title = 503, "Service Unavailable"

    def __init__(self, detail: str, retry_after: int = 2) -> None:
        super().__init__(detail, headers={"Retry-After": str(retry_after)})
