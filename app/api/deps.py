"""Dependencies: settings, the per-request transaction, Redis, and scope checks."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Network, IPv6Network, ip_address
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app.auth import service as auth_service
from app.auth import sessions
from app.auth.keys import Scope
from app.auth.rate_limit import TokenBuckets
from app.auth.service import Principal
from app.config import Settings
from app.errors import TooManyRequests, Unauthorized
from app.infra.redis_client import RedisClient
from app.matches import group_commit
from app.matches.group_commit import GroupCommit
from app.matches.recording import Writers
from app.queues.watch import TicketWatch

# Batches one process has in its transactions at once. Batches of random players share some
# (two of 1,000 2v2 matches over 100,000 players share about 160), so they wait on each
# other's row locks, and a waiting batch holds the rows it locked before (one fixed order):
# more in flight queue up behind one another, each holding locks the next needs, and stretch
# the span from lock to commit with their own work. One at a time per process keeps one
# batch's locks held only while it writes; the others check and prepare their items meanwhile
# (bench/api_matches.py --batch 1000: docs/benchmarks.md, issue #23).
BATCH_WRITERS = 1


@dataclass
class Resources:
    """What the lifespan builds once and every request shares."""

    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    redis: RedisClient
    limits: TokenBuckets = field(init=False)  # requests per key
    auth_failures: TokenBuckets = field(init=False)  # failed authentications per client address
    # Long-polls on queue tickets wait here (one Redis subscription per process).
    tickets: TicketWatch = field(init=False)
    # Single match posts gather here into shared transactions (app.matches.group_commit).
    matches: GroupCommit = field(init=False)
    # Batch posts are recorded here, BATCH_WRITERS at a time.
    batches: Writers = field(init=False)

    def __post_init__(self) -> None:
        self.limits = TokenBuckets(self.settings.rate_limit_per_s, self.settings.rate_limit_burst)
        self.auth_failures = TokenBuckets(
            self.settings.auth_failures_per_s, self.settings.auth_failure_burst, max_buckets=4096
        )
        self.tickets = TicketWatch(self.redis)
        writers = Writers(self.engine, self.sessions, self.settings, group_commit.WRITERS)
        self.matches = GroupCommit(writers)
        self.batches = Writers(self.engine, self.sessions, self.settings, BATCH_WRITERS)


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


async def get_redis(res: Annotated[Resources, Depends(resources)]) -> RedisClient:
    return res.redis


SettingsDep = Annotated[Settings, Depends(get_settings)]
# scope="function": the transaction commits before the response is sent, so a client is
# never told 201 for a write whose commit then failed (or whose process then died).
SessionDep = Annotated[AsyncSession, Depends(get_session, scope="function")]
RedisDep = Annotated[RedisClient, Depends(get_redis)]


async def get_ticket_watch(res: Annotated[Resources, Depends(resources)]) -> TicketWatch:
    return res.tickets


TicketWatchDep = Annotated[TicketWatch, Depends(get_ticket_watch)]


def bearer_token(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


Network = IPv4Network | IPv6Network


def _trusted(address: str, proxies: Sequence[Network]) -> bool:
    try:
        ip = ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(request: Request, proxies: Sequence[Network]) -> str:
    """The address a request came from. X-Forwarded-For counts only when the peer is a
    trusted proxy (TRUSTED_PROXIES); then the client is the right-most hop that is not one
    of them (hops to its left were written by the client and prove nothing)."""
    peer = request.client.host if request.client else ""
    forwarded = request.headers.get("x-forwarded-for")
    if not forwarded or not _trusted(peer, proxies):
        return peer
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop
    return hops[0] if hops else peer


def _retry_after(wait: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(wait)))}


ResourcesDep = Annotated[Resources, Depends(resources)]


async def authenticate(request: Request, res: Resources, presented: str | None, scope: Scope) -> Principal:
    """The key holding `scope`, as auth_service.authenticate finds it; a failure spends a
    token of the client address's bucket, and once that is empty answers 429 rather than 401.

    Only failures count: a valid key is never held back by it, though it shares the address
    (a studio's backends behind one NAT)."""
    return await _failures_counted(request, res, auth_service.authenticate(res.sessions, presented, scope))


async def authenticate_session(
    request: Request, res: Resources, session_id: str | None, scope: Scope
) -> Principal:
    """The key of an ops-page session holding `scope` (app.auth.sessions); a failure counts
    as a failed key does."""
    return await _failures_counted(request, res, sessions.signed_in(res.sessions, session_id, scope))


async def _failures_counted(request: Request, res: Resources, check: Awaitable[Principal]) -> Principal:
    try:
        return await check
    except Unauthorized:
        wait = res.auth_failures.take(client_address(request, res.settings.trusted_proxies))
        if wait > 0:
            raise TooManyRequests(
                "too many failed authentications from this address; retry after the given seconds",
                headers=_retry_after(wait),
            ) from None
        raise


async def authorize(request: Request, res: Resources, scope: Scope) -> Principal:
    """The request's key if it holds `scope`, is within its request rate and, for a route with a
    `{mode}` in its path, may act on that mode; else 401, 403 or 429: what `require` checks. A
    mode named in a body or query is checked by its route, with the same
    auth_service.require_mode."""
    key = await authenticate(request, res, bearer_token(request), scope)
    request.state.api_key_id = key.key_id
    wait = res.limits.take(key.key_id)
    if wait > 0:
        raise TooManyRequests(
            "this key is over its request rate; retry after the given seconds", headers=_retry_after(wait)
        )
    check_path_mode(request, key)
    return key


def check_path_mode(request: Request, key: Principal) -> None:
    """403 when the route's `{mode}` path parameter names a mode outside the key's modes."""
    mode = request.path_params.get("mode")
    if mode is not None:
        auth_service.require_mode(key, mode)


def require(scope: Scope) -> Callable[..., Awaitable[Principal]]:
    """A dependency that lets a request through only with a key holding `scope`, within the
    key's request rate."""

    async def check(request: Request, res: ResourcesDep) -> Principal:
        return await authorize(request, res, scope)

    check.__name__ = f"require_{scope.name}"
    return check


ReadKey = Annotated[Principal, Depends(require(Scope.read))]
AdminKey = Annotated[Principal, Depends(require(Scope.admin))]
# The results:write check, also run by name where a route runs its dependencies itself
# (app.api.matches, POST /v1/matches).
results_key = require(Scope.results_write)
ResultsKey = Annotated[Principal, Depends(results_key)]
MatchmakingKey = Annotated[Principal, Depends(require(Scope.matchmaking))]
