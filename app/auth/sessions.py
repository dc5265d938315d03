"""The ops page's sessions: signing in trades a key for a random session id, and the browser
keeps only that id (in a cookie), never the key.

The id is 32 random bytes; only its SHA-256 is stored (`ui_sessions`, migration 0014), with
the key it was signed in with and when it expires. PostgreSQL holds them, not Redis: a session
must outlive a restart and be seen by every instance, the ops page works while Redis is down,
and revoking a key ends its sessions in the same transaction (app.auth.service.revoke_key).
A session counts only while unexpired and while its key is active, checked on every page, so
a revocation ends it at once everywhere, without waiting for the key cache.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.auth import repository, service
from app.auth.keys import Scope
from app.auth.service import Principal
from app.errors import Unauthorized

SESSION_ID_BYTES = 32


def _hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


async def sign_in(session: AsyncSession, key: Principal, seconds: float) -> str:
    """A new session of `key` lasting `seconds`: its id, for the cookie only. Expired
    sessions are cleared on the way (an indexed delete, as often as people sign in)."""
    await repository.end_expired_sessions(session)
    session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
    await repository.add_session(session, _hash(session_id), key.key_id, seconds)
    return session_id


async def signed_in(
    sessions: async_sessionmaker[AsyncSession], session_id: str | None, needed: Scope
) -> Principal:
    """The key of a live session, if it holds `needed`; 401 for no session, an unknown or
    expired one, or one whose key was revoked."""
    if not session_id:
        raise Unauthorized("not signed in")
    # A session of its own, as the key lookup: the page's transaction holds no connection yet.
    async with sessions() as session:
        key_id = await repository.session_key(session, _hash(session_id))
    if key_id is None:
        raise Unauthorized("the session expired or was ended; sign in again")
    return await service.key_of_session(sessions, key_id, needed)


async def sign_out(session: AsyncSession, session_id: str | None) -> None:
    """End the session (nothing to do without one)."""
    if session_id:
        await repository.end_session(session, _hash(session_id))
