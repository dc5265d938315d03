"""Dependencies: settings, the per-request transaction, Redis, and scope checks."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.auth import service as auth_service
from app.auth.keys import Scope
from app.auth.rate_limit import TokenBuckets
from app.auth.service import Principal
from app.config import Settings
from app.errors import TooManyRequests
from app.queues.watch import TicketWatch


@dataclass
class Resources:
    """What the lifespan builds once and every request shares."""

    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: Redis
    limits: TokenBuckets = field(init=False)
    # Long-polls on queue tickets wait here (one Redis subscription per process).
    tickets: TicketWatch = field(init=False)

    def __post_init__(self) -> None:
        self.limits = TokenBuckets(self.settings.rate_limit_per_s, self.settings.rate_limit_burst)
        self.tickets = TicketWatch(self.redis)


# Dependencies are `async def` even when they do not await: FastAPI runs plain `def`
# dependencies in a thread pool, a thread hop on every request.
async def resources(request: Request) -> Resources:
    res: Resources = request.app.state.resources
    return res


async def get_settings(res: Annotated[Resources, Depends(resources)]) -> Settings:
    return res.settings


async def get_session(res: Annotated[Resources, Depends(resources)]) -> AsyncIterator[AsyncSession]:
    """One transaction per request: commit when the handler returns, roll back on error."""
    async with res.sessions() as session, session.begin():
        yield session


async def get_redis(res: Annotated[Resources, Depends(resources)]) -> Redis:
    return res.redis


SettingsDep = Annotated[Settings, Depends(get_settings)]
# scope="function": the transaction commits before the response is sent, so a client is
# never told 201 for a write whose commit then failed (or whose process then died).
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
RedisDep = Annotated[Redis, Depends(get_redis)]


async def get_ticket_watch(res: Annotated[Resources, Depends(resources)]) -> TicketWatch:
    return res.tickets


TicketWatchDep = Annotated[TicketWatch, Depends(get_ticket_watch)]


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def require(scope: Scope) -> Callable[..., Awaitable[Principal]]:
    """A dependency that lets a request through only with a key holding `scope`."""

    async def check(
        request: Request, session: SessionDep, res: Annotated[Resources, Depends(resources)]
    ) -> Principal:
        key = await auth_service.authenticate(session, bearer_token(request), scope)
        request.state.api_key_id = key.key_id
        wait = res.limits.take(key.key_id)
        if wait > 0:
            raise TooManyRequests(
                "this key is over its request rate; retry after the given seconds",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        return key

    check.__name__ = f"require_{scope.name}"
    return check


ReadKey = Annotated[Principal, Depends(require(Scope.read))]
AdminKey = Annotated[Principal, Depends(require(Scope.admin))]
ResultsKey = Annotated[Principal, Depends(require(Scope.results_write))]
MatchmakingKey = Annotated[Principal, Depends(require(Scope.matchmaking))]
