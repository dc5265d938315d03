"""SQL for API keys and the ops page's sessions (migration 0014)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, text, update
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


_ADD_SESSION = text("""
    INSERT INTO ui_sessions (id_hash, key_id, expires_at)
    VALUES (:id_hash, :key_id, now() + make_interval(secs => :seconds))
""")
# A session counts only while it has not expired and its key is not revoked (here, not only
# when revoke() deletes it: ADMIN_API_KEY revokes the bootstrap keys it replaces by row).
_SESSION_KEY = text("""
    SELECT s.key_id FROM ui_sessions s JOIN api_keys k ON k.id = s.key_id
    WHERE s.id_hash = :id_hash AND s.expires_at > now() AND k.revoked_at IS NULL
""")
_END_SESSION = text("DELETE FROM ui_sessions WHERE id_hash = :id_hash")
_END_SESSIONS_OF = text("DELETE FROM ui_sessions WHERE key_id = :key_id")
_END_EXPIRED = text("DELETE FROM ui_sessions WHERE expires_at <= now()")


async def add_session(session: AsyncSession, id_hash: str, key_id: str, seconds: float) -> None:
    await session.execute(_ADD_SESSION, {"id_hash": id_hash, "key_id": key_id, "seconds": seconds})


async def session_key(session: AsyncSession, id_hash: str) -> str | None:
    """The id of the key a live session was signed in with, else None."""
    row = (await session.execute(_SESSION_KEY, {"id_hash": id_hash})).first()
    return None if row is None else str(row[0])


async def end_session(session: AsyncSession, id_hash: str) -> None:
    await session.execute(_END_SESSION, {"id_hash": id_hash})


async def end_sessions_of(session: AsyncSession, key_id: str) -> None:
    await session.execute(_END_SESSIONS_OF, {"key_id": key_id})


async def end_expired_sessions(session: AsyncSession) -> None:
    await session.execute(_END_EXPIRED)
