"""SQL for modes."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Mode

_HAS_MATCHES = text("SELECT EXISTS (SELECT 1 FROM matches WHERE mode = :mode)")


async def get(session: AsyncSession, name: str) -> Mode | None:
    return await session.get(Mode, name, populate_existing=True)


async def list_all(session: AsyncSession) -> list[Mode]:
    return list((await session.scalars(select(Mode).order_by(Mode.name))).all())


async def upsert(session: AsyncSession, name: str, values: dict[str, Any]) -> Mode:
    statement = insert(Mode).values(name=name, **values)
    if values:
        statement = statement.on_conflict_do_update(
            index_elements=[Mode.name], set_={**values, "updated_at": func.now()}
        )
    else:
        statement = statement.on_conflict_do_nothing(index_elements=[Mode.name])
    await session.execute(statement)
    mode = await get(session, name)
    assert mode is not None
    return mode


_NEXT_TIER_VERSION = text(
    "UPDATE modes SET tier_version = tier_version + 1 WHERE name = :mode RETURNING tier_version"
)


async def next_tier_version(session: AsyncSession, name: str) -> int:
    """Move the mode's tier settings' version on (migration 0016); the new version."""
    return int((await session.execute(_NEXT_TIER_VERSION, {"mode": name})).scalar_one())


async def has_matches(session: AsyncSession, name: str) -> bool:
    """Whether any match (rated, imported or void) was recorded in the mode."""
    return bool(await session.scalar(_HAS_MATCHES, {"mode": name}))
