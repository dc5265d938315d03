"""SQL for API keys."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiKey


async def get(session: AsyncSession, key_id: str) -> ApiKey | None:
    return await session.get(ApiKey, key_id)


async def list_all(session: AsyncSession) -> list[ApiKey]:
    return list((await session.scalars(select(ApiKey).order_by(ApiKey.created_at, ApiKey.id))).all())


async def revoke(session: AsyncSession, key_id: str) -> bool:
    result = await session.execute(
        update(ApiKey)
        .where(ApiKey.id == key_id, ApiKey.revoked_at.is_(None))
        .values(revoked_at=dt.datetime.now(dt.UTC))
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def active_bootstrap(session: AsyncSession) -> list[ApiKey]:
    rows = await session.scalars(
        select(ApiKey).where(ApiKey.bootstrap.is_(True), ApiKey.revoked_at.is_(None))
    )
    return list(rows.all())
