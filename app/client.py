"""A typed Python client for game backends, on httpx, sync and async.

    from app.client import Client
    with Client("http://127.0.0.1:8000", api_key) as api:
        result = api.post_match({"match_id": "g-1", "teams": [...]})

Errors come back as ApiError carrying the problem+json body. Posting the same match
again is safe: the service applies each match_id once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import httpx
from pydantic import BaseModel

from app.matches.schemas import MatchIn, MatchOut
from app.modes.schemas import ModeList, ModeOut
from app.players.schemas import PlayerMatches, PlayerOut
from app.queues.schemas import MatchmakeOut, RequeueOut, TicketBatchOut, TicketCreated, TicketIn, TicketOut

T = TypeVar("T", bound=BaseModel)


class ApiError(Exception):
    """A non-2xx answer: `status` and the problem+json `problem`."""

    def __init__(self, status: int, problem: dict[str, Any]) -> None:
        super().__init__(f"{status} {problem.get('title', '')}: {problem.get('detail', '')}")
        self.status = status
        self.problem = problem


@dataclass(frozen=True)
class _Call(Generic[T]):
    method: str
    path: str
    model: type[T]
    json: Any = None
    params: dict[str, Any] | None = None
    timeout: float | None = None  # a long-poll's; None: the client's

    def parse(self, response: httpx.Response) -> T:
        if response.is_error:
            try:
                problem = response.json()
            except ValueError:
                problem = {"detail": response.text}
            raise ApiError(response.status_code, problem)
        if response.status_code == 204:
            return self.model()
        return self.model.model_validate_json(response.content)

    @property
    def options(self) -> dict[str, Any]:
        return {"json": self.json, "params": self.params, "timeout": self.timeout or httpx.USE_CLIENT_DEFAULT}


class _NoContent(BaseModel):
    """A 204's (empty) body."""


# A long-poll's HTTP timeout: its wait, plus this much for the answer to arrive.
WAIT_MARGIN_SECONDS = 10.0


def _body(match: MatchIn | dict[str, Any]) -> Any:
    return match.model_dump(mode="json", exclude_none=True) if isinstance(match, MatchIn) else match


class _Calls:
    """The operations, as data; Client and AsyncClient only differ in how they send."""

    @staticmethod
    def post_match(match: MatchIn | dict[str, Any]) -> _Call[MatchOut]:
        return _Call("POST", "/v1/matches", MatchOut, json=_body(match))

    @staticmethod
    def get_match(match_id: str) -> _Call[MatchOut]:
        return _Call("GET", f"/v1/matches/{match_id}", MatchOut)

    @staticmethod
    def void_match(match_id: str) -> _Call[MatchOut]:
        return _Call("POST", f"/v1/matches/{match_id}/void", MatchOut)

    @staticmethod
    def get_player(player_id: str) -> _Call[PlayerOut]:
        return _Call("GET", f"/v1/players/{player_id}", PlayerOut)

    @staticmethod
    def player_matches(
        player_id: str, mode: str | None, limit: int, cursor: str | None
    ) -> _Call[PlayerMatches]:
        params = {k: v for k, v in {"mode": mode, "limit": limit, "cursor": cursor}.items() if v is not None}
        return _Call("GET", f"/v1/players/{player_id}/matches", PlayerMatches, params=params)

    @staticmethod
    def set_rating(player_id: str, mode: str, mu: float, sigma: float) -> _Call[PlayerOut]:
        return _Call(
            "PUT", f"/v1/players/{player_id}/ratings/{mode}", PlayerOut, json={"mu": mu, "sigma": sigma}
        )

    @staticmethod
    def put_mode(name: str, params: dict[str, Any]) -> _Call[ModeOut]:
        return _Call("PUT", f"/v1/modes/{name}", ModeOut, json=params)

    @staticmethod
    def get_mode(name: str) -> _Call[ModeOut]:
        return _Call("GET", f"/v1/modes/{name}", ModeOut)

    @staticmethod
    def list_modes() -> _Call[ModeList]:
        return _Call("GET", "/v1/modes", ModeList)

    @staticmethod
    def enqueue(mode: str, ticket: TicketIn | dict[str, Any]) -> _Call[TicketCreated]:
        return _Call("POST", f"/v1/queues/{mode}/tickets", TicketCreated, json=_ticket(ticket))

    @staticmethod
    def enqueue_batch(mode: str, tickets: list[TicketIn | dict[str, Any]]) -> _Call[TicketBatchOut]:
        body = {"tickets": [_ticket(ticket) for ticket in tickets]}
        return _Call("POST", f"/v1/queues/{mode}/tickets/batch", TicketBatchOut, json=body)

    @staticmethod
    def get_ticket(mode: str, ticket_id: str, wait: float | None) -> _Call[TicketOut]:
        params = None if wait is None else {"wait": wait}
        timeout = None if wait is None else wait + WAIT_MARGIN_SECONDS
        return _Call(
            "GET", f"/v1/queues/{mode}/tickets/{ticket_id}", TicketOut, params=params, timeout=timeout
        )

    @staticmethod
    def player_ticket(mode: str, player_id: str) -> _Call[TicketOut]:
        return _Call("GET", f"/v1/queues/{mode}/players/{player_id}/ticket", TicketOut)

    @staticmethod
    def cancel_ticket(mode: str, ticket_id: str) -> _Call[_NoContent]:
        return _Call("DELETE", f"/v1/queues/{mode}/tickets/{ticket_id}", _NoContent)

    @staticmethod
    def matchmake(mode: str, max_matches: int | None) -> _Call[MatchmakeOut]:
        body = None if max_matches is None else {"max_matches": max_matches}
        return _Call("POST", f"/v1/queues/{mode}/matchmake", MatchmakeOut, json=body)

    @staticmethod
    def requeue(mode: str, proposal_id: str, cancel: list[str]) -> _Call[RequeueOut]:
        path = f"/v1/queues/{mode}/proposals/{proposal_id}/requeue"
        return _Call("POST", path, RequeueOut, json={"cancel": cancel})


def _ticket(ticket: TicketIn | dict[str, Any]) -> Any:
    return ticket.model_dump(mode="json") if isinstance(ticket, TicketIn) else ticket


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": "skillservice-client/1"}


class Client:
    """Blocking client."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    def _run(self, call: _Call[T]) -> T:
        return call.parse(self._http.request(call.method, call.path, **call.options))

    def post_match(self, match: MatchIn | dict[str, Any]) -> MatchOut:
        return self._run(_Calls.post_match(match))

    def get_match(self, match_id: str) -> MatchOut:
        return self._run(_Calls.get_match(match_id))

    def void_match(self, match_id: str) -> MatchOut:
        return self._run(_Calls.void_match(match_id))

    def get_player(self, player_id: str) -> PlayerOut:
        return self._run(_Calls.get_player(player_id))

    def player_matches(
        self, player_id: str, mode: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> PlayerMatches:
        return self._run(_Calls.player_matches(player_id, mode, limit, cursor))

    def set_rating(self, player_id: str, mode: str, mu: float, sigma: float) -> PlayerOut:
        return self._run(_Calls.set_rating(player_id, mode, mu, sigma))

    def put_mode(self, name: str, **params: Any) -> ModeOut:
        return self._run(_Calls.put_mode(name, params))

    def get_mode(self, name: str) -> ModeOut:
        return self._run(_Calls.get_mode(name))

    def list_modes(self) -> list[ModeOut]:
        return self._run(_Calls.list_modes()).modes

    def enqueue(self, mode: str, ticket: TicketIn | dict[str, Any]) -> TicketCreated:
        return self._run(_Calls.enqueue(mode, ticket))

    def enqueue_batch(self, mode: str, tickets: list[TicketIn | dict[str, Any]]) -> TicketBatchOut:
        return self._run(_Calls.enqueue_batch(mode, tickets))

    def get_ticket(self, mode: str, ticket_id: str) -> TicketOut:
        return self._run(_Calls.get_ticket(mode, ticket_id, None))

    def wait_for_ticket(self, mode: str, ticket_id: str, wait: float = 30.0) -> TicketOut:
        """Long-poll: the ticket once it leaves `queued`, or as it is after `wait` s (≤ 60)."""
        return self._run(_Calls.get_ticket(mode, ticket_id, wait))

    def player_ticket(self, mode: str, player_id: str) -> TicketOut:
        return self._run(_Calls.player_ticket(mode, player_id))

    def cancel_ticket(self, mode: str, ticket_id: str) -> None:
        self._run(_Calls.cancel_ticket(mode, ticket_id))

    def matchmake(self, mode: str, max_matches: int | None = None) -> MatchmakeOut:
        return self._run(_Calls.matchmake(mode, max_matches))

    def requeue(self, mode: str, proposal_id: str, cancel: list[str] | None = None) -> RequeueOut:
        return self._run(_Calls.requeue(mode, proposal_id, cancel or []))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """asyncio client with the same operations."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )

    async def _run(self, call: _Call[T]) -> T:
        return call.parse(await self._http.request(call.method, call.path, **call.options))

    async def post_match(self, match: MatchIn | dict[str, Any]) -> MatchOut:
        return await self._run(_Calls.post_match(match))

    async def get_match(self, match_id: str) -> MatchOut:
        return await self._run(_Calls.get_match(match_id))

    async def void_match(self, match_id: str) -> MatchOut:
        return await self._run(_Calls.void_match(match_id))

    async def get_player(self, player_id: str) -> PlayerOut:
        return await self._run(_Calls.get_player(player_id))

    async def player_matches(
        self, player_id: str, mode: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> PlayerMatches:
        return await self._run(_Calls.player_matches(player_id, mode, limit, cursor))

    async def set_rating(self, player_id: str, mode: str, mu: float, sigma: float) -> PlayerOut:
        return await self._run(_Calls.set_rating(player_id, mode, mu, sigma))

    async def put_mode(self, name: str, **params: Any) -> ModeOut:
        return await self._run(_Calls.put_mode(name, params))

    async def get_mode(self, name: str) -> ModeOut:
        return await self._run(_Calls.get_mode(name))

    async def list_modes(self) -> list[ModeOut]:
        return (await self._run(_Calls.list_modes())).modes

    async def enqueue(self, mode: str, ticket: TicketIn | dict[str, Any]) -> TicketCreated:
        return await self._run(_Calls.enqueue(mode, ticket))

    async def enqueue_batch(self, mode: str, tickets: list[TicketIn | dict[str, Any]]) -> TicketBatchOut:
        return await self._run(_Calls.enqueue_batch(mode, tickets))

    async def get_ticket(self, mode: str, ticket_id: str) -> TicketOut:
        return await self._run(_Calls.get_ticket(mode, ticket_id, None))

    async def wait_for_ticket(self, mode: str, ticket_id: str, wait: float = 30.0) -> TicketOut:
        """Long-poll: the ticket once it leaves `queued`, or as it is after `wait` s (≤ 60)."""
        return await self._run(_Calls.get_ticket(mode, ticket_id, wait))

    async def player_ticket(self, mode: str, player_id: str) -> TicketOut:
        return await self._run(_Calls.player_ticket(mode, player_id))

    async def cancel_ticket(self, mode: str, ticket_id: str) -> None:
        await self._run(_Calls.cancel_ticket(mode, ticket_id))

    async def matchmake(self, mode: str, max_matches: int | None = None) -> MatchmakeOut:
        return await self._run(_Calls.matchmake(mode, max_matches))

    async def requeue(self, mode: str, proposal_id: str, cancel: list[str] | None = None) -> RequeueOut:
        return await self._run(_Calls.requeue(mode, proposal_id, cancel or []))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
