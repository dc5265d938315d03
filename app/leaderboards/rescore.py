"""Re-score a mode's leaderboard in batches: its stored `conservative` rewritten by the mode's
current k, drift and drift_as_of, a short transaction per batch of players.

A change of conservative_k or drift_per_day (PUT /v1/modes/{mode}), and the daily drift
re-rank (app.leaderboards.drift), set `modes.rescore_after` to '' (migration 0017): every
row is behind. A walk then rewrites the rows in player id order, BATCH at a time, and moves
the column on to the last id it rewrote, NULL after the last row, in the batch's own
transaction: a walk cut short resumes where it stopped, and two walkers of one mode share
the work (each batch locks the modes row, so they take turns).

Each batch holds the mode's lock shared, as a post does (a replay's swap excludes it), and
locks its rows in the order match posts lock theirs (mode, player id): a post waits for one
batch at most. The leaderboard counts follow in each batch's transaction (the trigger of
migration 0003), so ranks stay exact for the values stored; while rows are behind, a read
says so (`rescoring`), since their values are still the old settings'.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.bulk import unbounded
from app.db.conservative import conservative_sql
from app.db.locks import SHARED_LOCK_SQL

# Players re-scored per transaction: a post waits for the one batch holding its player at most.
BATCH = 1_000

_SHARED_LOCK = text(f"SELECT {SHARED_LOCK_SQL}")
# A batch lost in a crash is redone by the next walk (rescore_after is moved in its
# transaction), so it need not wait for its commit to reach the disk.
_ASYNC_COMMIT = text("SET LOCAL synchronous_commit = off")
# FOR NO KEY UPDATE: concurrent walkers, and a PUT or the daily re-rank starting the walk
# over, wait for this batch's commit; posts inserting ratings (a key share of the modes row,
# for the foreign key) do not.
_CURSOR = text("SELECT rescore_after FROM modes WHERE name = :mode FOR NO KEY UPDATE")

_RESCORED = conservative_sql("r.mu", "r.sigma", last="r.last_played_at")
_BATCH = text(f"""
    WITH batch AS (
        SELECT player_id FROM ratings
        WHERE mode = :mode AND player_id > :after
        ORDER BY player_id
        LIMIT :limit
        FOR UPDATE
    ), moved AS (
        UPDATE ratings r SET conservative = {_RESCORED}
        FROM batch, modes m
        WHERE m.name = :mode AND r.mode = :mode AND r.player_id = batch.player_id
          AND r.conservative IS DISTINCT FROM {_RESCORED}
    )
    SELECT max(player_id), count(*) FROM batch
""")
_MOVE = text("UPDATE modes SET rescore_after = :to WHERE name = :mode")
_BEHIND = text("""
    SELECT count(*) FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.mode = :mode AND r.player_id > m.rescore_after
""")
_START = text("UPDATE modes SET rescore_after = '' WHERE name = :mode")


async def start(session: AsyncSession, mode: str) -> None:
    """Put every row of the mode behind: the next walk rewrites them all."""
    await session.execute(_START, {"mode": mode})


async def behind(session: AsyncSession, mode: str) -> int:
    """How many of the mode's rows a walk has yet to reach (0 when none is under way)."""
    return int((await session.execute(_BEHIND, {"mode": mode})).scalar_one())


async def step(sessions: async_sessionmaker[AsyncSession], mode: str, batch: int = BATCH) -> int | None:
    """Re-score the next batch of the mode's rows behind: the rows visited; None when none
    were behind (the walk is done)."""
    async with sessions() as session, session.begin():
        await session.execute(_ASYNC_COMMIT)
        # A batch may wait for a whole-mode rewrite (a replay's swap) past the request
        # statement timeout.
        await unbounded(session)
        await session.execute(_SHARED_LOCK, {"mode": mode})
        after = (await session.execute(_CURSOR, {"mode": mode})).scalar_one_or_none()
        if after is None:
            return None
        last, count = (await session.execute(_BATCH, {"mode": mode, "after": after, "limit": batch})).one()
        # Fewer than asked: the batch reached the last row.
        await session.execute(_MOVE, {"mode": mode, "to": last if count == batch else None})
        return int(count)


async def walk(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    batch: int = BATCH,
    moved: Callable[[int], None] = lambda visited: None,
    stop: Callable[[], Awaitable[bool]] | None = None,
) -> int:
    """Re-score the mode's rows behind until none is (or `stop` says so before a batch),
    telling `moved` the rows visited so far: their number."""
    visited = 0
    while stop is None or not await stop():
        count = await step(sessions, mode, batch)
        if count is None:
            break
        visited += count
        moved(visited)
    return visited
