"""The blocking and the asyncio client: the same operations, two ways of sending."""

from __future__ import annotations

import asyncio
import time
from typing import Any, TypeVar

import httpx

from app.client.calls import Call, SendsLater, SendsNow
from app.client.operations import Operations
from app.client.retry import RetryPolicy

T = TypeVar("T")


def _http_options(base_url: str, api_key: str, timeout: float) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "headers": {"Authorization": f"Bearer {api_key}", "User-Agent": "skillservice-client/2"},
        "timeout": timeout,
    }


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
            retries.sent += 1
            try:
                response = self._http.request(
                    call.method, call.url, params=call.query, json=call.request.json, timeout=call.timeout
                )
            except httpx.TransportError as error:
                wait = retries.wait_before_next(call.repeatable, error)
                if wait is None:
                    raise
            else:
                wait = retries.wait_before_next(call.repeatable, response)
                if wait is None:
                    return call.answer(response)
            time.sleep(wait)

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
            retries.sent += 1
            try:
                response = await self._http.request(
                    call.method, call.url, params=call.query, json=call.request.json, timeout=call.timeout
                )
            except httpx.TransportError as error:
                wait = retries.wait_before_next(call.repeatable, error)
                if wait is None:
                    raise
            else:
                wait = retries.wait_before_next(call.repeatable, response)
                if wait is None:
                    return call.answer(response)
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
