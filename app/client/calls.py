"""How an operation is described once and sent by either client.

An `Operation` is a method of `Operations` declared with its HTTP method, its route (as in
openapi/openapi.json) and how to decode its answer; its body only builds a `Request[T]` (path
values, query and JSON body), `T` being what the call returns: mypy holds the decoder to it,
and the method's signature on a client says `-> T` (docs/client.md lists them). `Client` and
`AsyncClient` inherit every operation and differ only in how they send: a blocking or an
awaitable `_send`.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, get_args, overload
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
class Request(Generic[T]):
    """What one call of an operation sends beyond the operation's method and route; `T` is
    what the call returns once answered."""

    path: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, Any] | None = None
    json: Any = None
    timeout: float | None = None  # seconds; None: the client's own (a long-poll needs longer)


def body(value: BaseModel | Any) -> Any:
    """A request body: a schema object as its JSON (unset optional fields left out), else as is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def json_content(value: Any) -> bytes:
    """A request body as compact UTF-8 JSON. JSON has no NaN or Infinity: a body holding one
    raises ValueError naming where (as the service's 422s do: `body.teams.0.players.1.weight`),
    before anything is sent; the service would refuse it with a 400 that cannot say where."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except ValueError:
        found = _not_finite(value, "body")
        if found is None:
            raise
        raise ValueError(f"{found[0]} is {found[1]}: JSON carries finite numbers only") from None


def _not_finite(value: Any, where: str) -> tuple[str, float] | None:
    """The location and value of the first NaN or infinity in `value`, if any."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (where, value)
    if isinstance(value, Mapping):
        items: Iterable[tuple[Any, Any]] = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = _not_finite(item, f"{where}.{key}")
        if found is not None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    """An operation with its request: everything a client needs to send it and decode the answer."""

    method: str
    route: str
    decode: Decoder[T]
    repeatable: bool
    request: Request[T]
    content: bytes | None  # the request's JSON, encoded once for every send

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
    AsyncClient it is a coroutine function returning T."""

    def __init__(
        self,
        method: str,
        route: str,
        decode: Decoder[T],
        build: Callable[Concatenate[Any, P], Request[T]],
        repeatable: bool | None,
    ) -> None:
        self.method = method
        self.route = route
        self.decode = decode
        self.build = build
        self.repeatable = method in REPEATABLE_METHODS if repeatable is None else repeatable
        self.name = build.__name__
        self.__doc__ = build.__doc__
        self.signature = _answered_signature(build)

    def call(self, owner: Any, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
        request = self.build(owner, *args, **kwargs)
        content = None if request.json is None else json_content(request.json)
        return Call(self.method, self.route, self.decode, self.repeatable, request, content)

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
        if isinstance(client, SendsLater):
            # A coroutine function, so that a bad argument raises where the call is awaited.
            async def sends_later(*args: P.args, **kwargs: P.kwargs) -> Any:
                return await send(self.call(client, *args, **kwargs))

            return self._presented(sends_later)

        def sends_now(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(self.call(client, *args, **kwargs))

        return self._presented(sends_now)

    def _presented(self, bound: Any) -> Any:
        """`bound` under the operation's name, docstring and answered signature."""
        bound.__module__ = self.build.__module__
        bound.__name__ = bound.__qualname__ = self.name
        bound.__doc__ = self.__doc__
        bound.__signature__ = self.signature
        return bound


def _answered_signature(build: Callable[..., Request[Any]]) -> inspect.Signature:
    """The signature a client's method shows (help(), inspect, docs/client.md): the builder's
    parameters without `self`, returning the T of its `-> Request[T]`."""
    signature = inspect.signature(build, eval_str=True)
    (returns,) = get_args(signature.return_annotation)
    if returns is type(None):
        returns = None
    return signature.replace(parameters=list(signature.parameters.values())[1:], return_annotation=returns)


def operation(
    method: str, route: str, decode: Decoder[T], *, repeatable: bool | None = None
) -> Callable[[Callable[Concatenate[Any, P], Request[T]]], Operation[P, T]]:
    """Declare a client method: `route` is the path template of openapi/openapi.json, `decode`
    turns the answer into the T of the method's `-> Request[T]` (mypy holds them to one T).
    `repeatable` (default: GET, PUT and DELETE are) says a connection error may be retried."""

    def declare(build: Callable[Concatenate[Any, P], Request[T]]) -> Operation[P, T]:
        return Operation(method, route, decode, build, repeatable)

    return declare
