"""Erasing a player on request (GDPR art. 17, the right to erasure).

The player's ratings in every mode, learning curves and waiting tickets go; every stored
row of history that names them (matches' participants and responses, seeds, queued proposals
and backfills' rosters in Redis) names instead one pseudonym, "erased:" and 128 random bits,
drawn for this erasure and kept nowhere beside the id: nothing links the two afterwards. So
other players' before and after values stay, and a replay or a smooth rates the pseudonym as a
player of its own. A pseudonym never gets a rating row (app.jobs leaves them out), so it is
never on a leaderboard; clients may not name a player "erased:..." (app.ids.PlayerId).

The id is never logged: the audit line names the pseudonym and the time.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import time

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.commit_hooks import after_commit
from app.erasure import repository
from app.ids import PSEUDONYM_PREFIX
from app.infra.redis_client import RedisClient
from app.modes import service as modes
from app.queues.store import QueueStore

audit = logging.getLogger("app.audit")


def new_pseudonym() -> str:
    return PSEUDONYM_PREFIX + secrets.token_hex(16)


async def erase_player(session: AsyncSession, redis: RedisClient, player_id: str) -> None:
    """Erase the player; nothing to do (an unknown or already erased id) is not an error.

    The queue goes first, so no new proposal can form from the player's tickets while the
    database part runs; that part then holds every mode's lock only for its own statements."""
    pseudonym = new_pseudonym()
    touched = 0
    for mode in await modes.list_modes(session):
        ttl = modes.rules_of(mode).ticket_ttl
        touched += await QueueStore(redis, mode.name).erase_player(player_id, pseudonym, time.time(), ttl)
    found = await repository.exists(session, player_id)
    if found:
        await repository.hold_filling_archives(session)
        await repository.lock_every_mode(session)
        await repository.pseudonymise(session, player_id, pseudonym)
        await repository.remove(session, player_id)
    if found or touched:
        at = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
        after_commit(session, lambda: audit.info("player erased as %s at %s", pseudonym, at))
