"""How an operation is described once and sent by either client.

An `Operation` is a method of `Operations` declared with its HTTP method, its route (as in
openapi/openapi.json) and how to decode its answer; its body only builds a `Request` (path
values, query and JSON body). `Client` and `AsyncClient` inherit every operation and
differ only in how they send: a blocking or an awaitable `_send`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload
from urllib.parse import quote

import httpx
from pydantic import BaseModel

P = ParamSpec("P")
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
Decoder = Callable[[httpx.Response], T]


class ApiError(Exception):
    """A non-2xx answer: `status`, the problem+json `problem` and the answer's `headers`."""

    def __init__(
        self, status: int, problem: dict[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(f"{status} {problem.get('title', '')}: {problem.get('detail', '')}")
        self.status = status
        self.problem = problem
        self.headers = dict(headers or {})

    @property
    def detail(self) -> str:
        return str(self.problem.get("detail", ""))

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Per-field validation errors (422), else empty."""
        return list(self.problem.get("errors") or [])

    @classmethod
    def of(cls, response: httpx.Response) -> ApiError:
        try:
            problem = response.json()
        except ValueError:
            problem = None
        if not isinstance(problem, dict):  # not ours (a proxy's page): keep its text as the detail
            try:
                title = HTTPStatus(response.status_code).phrase
            except ValueError:
                title = "Error"
            problem = {"type": "about:blank", "title": title, "status": response.status_code}
            problem["detail"] = response.text[:1000]
        return cls(response.status_code, problem, response.headers)


def model(cls: type[M]) -> Decoder[M]:
    """Decode the answer's JSON as `cls`."""
    return lambda response: cls.model_validate_json(response.content)


def no_content(response: httpx.Response) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Request:
    """What one call of an operation sends beyond the operation's method and route."""

    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, Any] | None = None
    json: Any = None
    timeout: float | None = None  # seconds; None: the client's own (a long-poll needs longer)


def body(value: BaseModel | Any) -> Any:
    """A request body: a schema object as its JSON (unset optional fields left out), else as is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """An operation with its request: everything a client needs to send it and decode the answer."""

    method: str
    route: str
    decode: Decoder[T]
    repeatable: bool
    request: Request

    @property
    def url(self) -> str:
        return self.route.format_map({k: quote(str(v), safe="") for k, v in self.request.path.items()})

    @property
    def query(self) -> dict[str, Any] | None:
        if self.request.query is None:
            return None
        return {k: v for k, v in self.request.query.items() if v is not None}

    @property
    def timeout(self) -> float | httpx._client.UseClientDefault:
        return httpx.USE_CLIENT_DEFAULT if self.request.timeout is None else self.request.timeout

    def answer(self, response: httpx.Response) -> T:
        """The decoded answer, or ApiError for an error status."""
        if response.is_error:
            raise ApiError.of(response)
        return self.decode(response)


# Safe to send again after a connection error: the service answers a repeat as it did the first.
REPEATABLE_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE"})


class SendsNow:
    """The kind of client whose operations return their answer (`Client`): what an
    operation read on it gives is typed by this base, so this module needs no clients."""


class SendsLater:
    """The kind of client whose operations return an awaitable of their answer (`AsyncClient`)."""


class Operation(Generic[P, T]):
    """A client method declared once: read on a Client it sends and returns T, on an
    AsyncClient it returns an awaitable of T."""

    def __init__(
        self,
        method: str,
        route: str,
        decode: Decoder[T],
        build: Callable[Concatenate[Any, P], Request],
        repeatable: bool | None,
    ) -> None:
        self.method = method
        self.route = route
        self.decode = decode
        self.build = build
        self.repeatable = method in REPEATABLE_METHODS if repeatable is None else repeatable
        self.name = build.__name__
        self.__doc__ = build.__doc__

    def call(self, owner: Any, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
        request = self.build(owner, *args, **kwargs)
        return Call(self.method, self.route, self.decode, self.repeatable, request)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Operation[P, T]: ...
    @overload
    def __get__(self, client: SendsNow, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, client: SendsLater, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        send = client._send

        def bound(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(self.call(client, *args, **kwargs))

        return functools.update_wrapper(
            bound, self.build, assigned=("__module__", "__name__", "__qualname__", "__doc__"), updated=()
        )


def operation(
    method: str, route: str, decode: Decoder[T], *, repeatable: bool | None = None
) -> Callable[[Callable[Concatenate[Any, P], Request]], Operation[P, T]]:
    """Declare a client method: `route` is the path template of openapi/openapi.json.
    `repeatable` (default: GET, PUT and DELETE are) says a connection error may be retried."""

    def declare(build: Callable[Concatenate[Any, P], Request]) -> Operation[P, T]:
        return Operation(method, route, decode, build, repeatable)

    return declare
