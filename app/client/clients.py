"""The blocking and the asyncio client: the same operations, two ways of sending."""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

import httpx

from app.client.calls import Call, SendsLater, SendsNow
from app.client.operations import Operations
from app.client.retry import Retries, RetryPolicy

T = TypeVar("T")
JSON_BODY = {"Content-Type": "application/json"}


def _http_options(base_url: str, api_key: str, timeout: float) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "headers": {"Authorization": f"Bearer {api_key}", "User-Agent": "skillservice-client/2"},
        "timeout": timeout,
    }


def _request(retries: Retries, call: Call[Any]) -> dict[str, Any]:
    """httpx's request arguments for the next send of `call`, counted in `retries`."""
    retries.sent += 1
    return {
        "method": call.method,
        "url": call.url,
        "params": call.query,
        "content": call.content,
        "headers": None if call.content is None else JSON_BODY,
        "timeout": call.timeout,
    }


def _settle(
    retries: Retries, call: Call[Any], outcome: httpx.Response | httpx.TransportError
) -> httpx.Response | float:
    """What a send's `outcome` leads to: the response when it is the answer, else the seconds
    to wait before sending again; an error that is not retried is raised. The one decision both
    clients take, so that they only differ in how they send and sleep."""
    wait = retries.wait_before_next(call.repeatable, outcome)
    if wait is not None:
        return wait
    if isinstance(outcome, httpx.TransportError):
        raise outcome
    return outcome


class Client(Operations, SendsNow):
    """Blocking client: `with Client(url, key) as api: api.post_match({...})`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(**_http_options(base_url, api_key, timeout), transport=transport)
        self.retry = retry or RetryPolicy()

    def _send(self, call: Call[T]) -> T:
        retries = self.retry.start()
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = self._http.request(**_request(retries, call))
            except httpx.TransportError as error:
                outcome = error
            settled = _settle(retries, call, outcome)
            if isinstance(settled, httpx.Response):
                return call.answer(settled)
            time.sleep(settled)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(Operations, SendsLater):
    """asyncio client: `async with AsyncClient(url, key) as api: await api.post_match({...})`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(**_http_options(base_url, api_key, timeout), transport=transport)
        self.retry = retry or RetryPolicy()

    async def _send(self, call: Call[T]) -> T:
        retries = self.retry.start()
        while True:
            try:
                outcome: httpx.Response | httpx.TransportError = await self._http.request(
                    **_request(retries, call)
                )
            except httpx.TransportError as error:
                outcome = error
            settled = _settle(retries, call, outcome)
            if isinstance(settled, httpx.Response):
                return call.answer(settled)
            await asyncio.sleep(settled)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
