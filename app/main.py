"""The app factory. Settings are read once, here; engine and Redis client are built in the lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app import background
from app.api import (
    docs,
    health,
    jobs,
    keys,
    leaderboards,
    lobbies,
    matches,
    modes,
    openapi,
    players,
    problems,
    queues,
    seasons,
    ui,
)
from app.api.deps import Resources
from app.api.middleware import RequestBody, RequestContext
from app.config import Settings
from app.db.engine import build_engine, build_sessionmaker
from app.infra.embedded import EmbeddedServers
from app.infra.redis_client import build_redis

log = logging.getLogger(__name__)

DESCRIPTION = """TrueSkill ratings and matchmaking.

Every error is `application/problem+json` (RFC 9457). Authenticate with
`Authorization: Bearer <api-key>`; scopes are `results:write`, `matchmaking`, `read` and
`admin` (which holds every scope)."""


def create_app(settings: Settings | None = None) -> FastAPI:
    config = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        embedded = EmbeddedServers(config.data_dir, wait_s=config.db_connect_wait_s)
        database_url = config.database_url or embedded.start_postgres()
        redis_url = config.redis_url or embedded.start_redis()
        engine = build_engine(config, database_url)
        redis = build_redis(config, redis_url)
        sessions = build_sessionmaker(engine)
        app.state.resources = resources = Resources(config, engine, sessions, redis)
        resources.tickets.start()
        maintenance = asyncio.create_task(background.maintain(sessions, redis, config.maintenance_every_s))
        # What a worker holds from here to exit (modules, the app and its schemas, NumPy) is
        # most of its heap, and every full collection walked all of it with the event loop
        # stalled: the match posts' p99 and a large batch's Python time paid for it
        # (docs/benchmarks.md, issue #23). Frozen, the collector leaves it alone (the gc
        # module's freeze()).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            await resources.tickets.stop()
            await resources.matches.close()
            await resources.batches.close()
            maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await maintenance
            await redis.aclose()
            await engine.dispose()
            embedded.stop()

    app = FastAPI(
        title="Skill service",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served by app.api.docs, without a CDN
        redoc_url=None,
    )
    docs.install(app)
    problems.install(app)
    problems.document(app)
    openapi.amend(app)
    # Requests find their route by trying the routers in this order: the busiest come first.
    for router in (
        queues.router,
        matches.router,
        lobbies.router,
        players.router,
        leaderboards.router,
        modes.router,
        keys.router,
        jobs.router,
        seasons.router,
        health.router,
        ui.router,
    ):
        app.include_router(router)
    app.add_middleware(RequestBody, max_bytes=config.max_body_bytes)
    app.add_middleware(RequestContext)
    return app
