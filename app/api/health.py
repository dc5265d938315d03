"""Liveness, readiness and Prometheus metrics (no key needed)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from app.api.deps import Resources, resources
from app.api.problems import unavailable
from app.queues import service as queues
from app.schemas import Health, Readiness

router = APIRouter(tags=["operations"])


@router.get("/healthz", operation_id="healthz", response_model=Health)
async def healthz() -> Health:
    """200 while the process lives."""
    return Health(status="ok")


@router.get(
    "/readyz",
    operation_id="readyz",
    response_model=Readiness,
    responses={503: {"description": "A dependency is down"}},
)
async def readyz(request: Request, res: Annotated[Resources, Depends(resources)]) -> Response:
    """200 when PostgreSQL and Redis answer; 503 naming the one that does not."""
    failed: list[str] = []

    async def check_postgres() -> None:
        try:
            async with asyncio.timeout(2.0), res.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception:
            failed.append("postgres")

    async def check_redis() -> None:
        try:
            async with asyncio.timeout(2.0):
                await res.redis.ping()
        except Exception:
            failed.append("redis")

    await asyncio.gather(check_postgres(), check_redis())
    if failed:
        return unavailable(f"not ready: {', '.join(sorted(failed))} unavailable", request)
    return Response(
        Readiness(status="ready", postgres="ok", redis="ok").model_dump_json(), media_type="application/json"
    )


@router.get(
    "/metrics",
    operation_id="metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(res: Annotated[Resources, Depends(resources)]) -> Response:
    """Prometheus text format. Queue gauges are read now; if PostgreSQL or Redis does not
    answer within a second, the rest is still served and the gauges keep their last values."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(1.0), res.sessions() as session, session.begin():
            await queues.refresh_depth_gauges(session, res.redis)
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
