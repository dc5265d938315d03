"""The per-mode advisory lock that separates single rating writes from whole-mode rewrites.

Writers of single ratings (a match, a rating override) hold it shared; rewrites of a whole
mode (new k, new leaderboard minimum, a replay's swap) hold it exclusively, so no writer's
trigger counts with the old rules while they recount. The locks are transaction-scoped.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

# pg_advisory_xact_lock key space for "the ratings of one mode".
LOCK_CLASS = 7240
# The key space of "one process folds the mode's leaderboard deltas" (never waited for).
COMPACT_LOCK_CLASS = LOCK_CLASS + 1


def shared_lock(mode: str) -> str:
    """SQL taking a mode's lock shared; `mode` is the parameter naming it, in the caller's
    placeholder style (":mode" for SQLAlchemy, "%(mode)s" for psycopg)."""
    return f"pg_advisory_xact_lock_shared({LOCK_CLASS}, hashtext(CAST({mode} AS varchar)))"


SHARED_LOCK_SQL = shared_lock(":mode")

_LOCK_EXCLUSIVE = text(f"SELECT pg_advisory_xact_lock({LOCK_CLASS}, hashtext(CAST(:mode AS varchar)))")


async def lock_mode(session: AsyncSession, mode: str) -> None:
    """Wait for every transaction writing the mode's ratings, and keep new ones out until commit."""
    await session.execute(_LOCK_EXCLUSIVE, {"mode": mode})
