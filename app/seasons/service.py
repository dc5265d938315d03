"""Seasons of a mode: start one (a job), read the current and past ones, their archived
leaderboards, and what a replay of the current season starts from.

A switch holds the mode's exclusive lock only to record the boundary (the applied_seq
high-water mark: every match is committed wholly before or wholly after it) and to move the
mode to the new season, which costs the same at any size. Match posts of the mode wait for
that and no longer. The ratings are then archived and reset in chunks of player ids by the
job; a player a match reaches before their chunk is archived and reset by the trigger on
ratings that the post's insert of its players runs (migration 0009). Both write the ending
season's archive unranked, into a table of its own with no index (migration 0010); once every
row is in, the job ranks it, builds its indexes and attaches it as a partition of
`season_standings`, and is done.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import metrics, pagination
from app.db.bulk import unbounded
from app.db.commit_hooks import after_commit
from app.db.locks import SHARED_LOCK_SQL, lock_mode
from app.db.models import Mode, Season
from app.errors import Conflict, NotFound, ServiceUnavailable, UnknownMode
from app.leaderboards import service as leaderboards
from app.leaderboards.schemas import LeaderboardPage, Standing
from app.modes import service as modes
from app.modes.schemas import SeasonOut
from app.progress import Progress
from app.seasons import repository
from app.seasons.schemas import FIRST_SEASON, ModeSeasons, SeasonIn

# Players archived and reset per transaction (a range of ids): a post waits for the one chunk
# holding its player at most (and the progress moves at each).
CHUNK = 10_000
# Seconds per player of a switch's steps that are one statement, for the bar's pace
# (app/progress.py): listing the chunks, and ranking the archive.
CHUNKS_S = 2e-6
RANK_S = 10e-6


JOB_KIND = "season"

ASYNC_COMMIT = text("SET LOCAL synchronous_commit = off")
# A chunk's reset writes `conservative` by the mode's k as it reads it: it holds the mode's
# lock shared, as a post does, so a change of k (which takes it exclusively) waits for the
# chunk, and the re-score that follows the change never misses a value the chunk wrote.
_SHARED_LOCK = text(f"SELECT {SHARED_LOCK_SQL}")


def _first(mode: Mode) -> SeasonOut:
    """The season a mode is in until its first switch."""
    return SeasonOut(
        name=FIRST_SEASON,
        ordinal=0,
        reset="none",
        pull=0.0,
        widen=0.0,
        started_at=mode.created_at,
        ended_at=None,
        players=None,
        ranked=None,
    )


async def of_mode(session: AsyncSession, mode: Mode) -> ModeSeasons:
    rows = await repository.seasons(session, mode.name)
    current = [SeasonOut.model_validate(s) for s in rows if s.ended_at is None]
    past = [SeasonOut.model_validate(s) for s in rows if s.ended_at is not None]
    return ModeSeasons(season=current[0] if current else _first(mode), past_seasons=past)


async def taken_names(session: AsyncSession, mode: str) -> set[str]:
    """The names a new season of the mode may not take: every season it had or has."""
    return {s.name for s in await repository.seasons(session, mode)} | {FIRST_SEASON}


@dataclass(frozen=True, slots=True)
class Switched:
    """The switch as committed: None for `ending` when the season had already started."""

    ending: str | None = None
    boundary: int | None = None
    held: float = 0.0  # seconds the mode's match posts were held


async def switch(sessions: async_sessionmaker[AsyncSession], mode: str, wanted: SeasonIn) -> Switched:
    """The switch itself, under the mode's exclusive lock: the boundary, the season rows, the
    mode's season moved on. The ratings still hold the ended season until `complete`."""
    await complete(sessions, mode)  # a switch before this one that did not finish
    async with sessions() as session, session.begin():
        await unbounded(session)
        await repository.stamp_unnumbered(session, mode)
    async with sessions() as session, session.begin():
        await unbounded(session)
        await modes.get_mode(session, mode)
        await lock_mode(session, mode)
        locked = time.perf_counter()
        existing = await repository.seasons(session, mode)
        named = next((s for s in existing if s.name == wanted.name), None)
        if named is not None and named.ended_at is None:
            return Switched()  # this job again: its process died after the switch committed
        if named is not None or wanted.name == FIRST_SEASON:
            raise Conflict(f"mode {mode!r} already has a season {wanted.name!r}")
        boundary = await repository.high_water(session)
        current = next((s for s in existing if s.ended_at is None), None)
        if current is None:
            await repository.first_season(session, mode, FIRST_SEASON)
        ending = FIRST_SEASON if current is None else current.name
        ordinal = 1 if current is None else current.ordinal + 1
        await repository.switch(
            session, mode, ending, wanted.name, ordinal, wanted.reset, wanted.factors(), boundary
        )
    return Switched(ending, boundary, time.perf_counter() - locked)


async def run_switch(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    params: dict[str, Any],
    progress: Progress | None = None,
) -> dict[str, Any]:
    """End the current season and start `params["name"]` with its reset (the job), moving
    `progress` as it goes (the switch, the archive and reset, the ranking)."""
    progress = progress or Progress()
    wanted = SeasonIn.model_validate(params)
    started = time.perf_counter()
    with progress.part(0.05, "switching", expect=0.5):
        switched = await switch(sessions, mode, wanted)
    await progress.reached()
    with progress.part(1.0) as completing:
        done = await complete(sessions, mode, completing)
    if switched.ending is None:
        return {"season": wanted.name, "already_started": True}
    pull, widen = wanted.factors()
    return {
        "season": wanted.name,
        "archived": switched.ending,
        "reset": wanted.reset,
        "pull": pull,
        "widen": widen,
        "players": done.players,
        "ranked": done.ranked,
        "boundary_seq": switched.boundary,
        "seconds": {
            "total": round(time.perf_counter() - started, 3),
            # How long the mode's match posts were held: the lock, not the archive and reset.
            "locked": round(switched.held, 3),
            **done.seconds,
        },
    }


@dataclass(frozen=True, slots=True)
class Completed:
    players: int | None = None
    ranked: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)


async def complete(
    sessions: async_sessionmaker[AsyncSession], mode: str, progress: Progress | None = None
) -> Completed:
    """Archive and reset every row still behind the mode's season, then rank the archive and
    attach it, moving `progress` (untouched when there is nothing to do: the last ended season
    is ranked already)."""
    progress = progress or Progress()
    started = time.perf_counter()
    async with sessions() as session, session.begin():
        rows = await repository.seasons(session, mode)
        current = next((s for s in rows if s.ended_at is None), None)
        ending = next((s for s in rows if s.ended_at is not None), None)
        if current is None or ending is None or ending.ranked is not None:
            return Completed()
        await unbounded(session)
        players = await repository.rated_count(session, mode)
        with progress.part(0.1, "archiving", expect=CHUNKS_S * players):
            chunks = await repository.chunks(session, mode, current.ordinal, CHUNK)
    await progress.reached()
    read = time.perf_counter()
    reset = 0
    with progress.part(0.85) as archiving:
        for done, (first, last) in enumerate(chunks, 1):
            async with sessions() as session, session.begin():
                # A chunk lost in a crash is redone by the job's next attempt (its rows are still
                # behind), so it need not wait for its commit to reach the disk.
                await session.execute(ASYNC_COMMIT)
                await unbounded(session)
                await session.execute(_SHARED_LOCK, {"mode": mode})
                reset += await repository.catch_up_range(session, mode, first, last)
            archiving.update(done / len(chunks))
    await progress.reached()
    caught_up = time.perf_counter()
    with progress.part(1.0, "ranking", expect=RANK_S * players):
        async with sessions() as session, session.begin():
            await unbounded(session)
            # The chunks cover every id and no row falls behind after the switch (a new one is
            # stamped with the current season): this finds none, and makes sure of it.
            reset += await repository.catch_up_range(session, mode, None, None)
            archived, ranked = await repository.rank(session, ending.id, int(ending.min_matches or 0))
            after_commit(session, lambda: metrics.RATINGS_WRITTEN.labels(mode, "season").inc(reset))
    finished = time.perf_counter()
    return Completed(
        archived,
        ranked,
        {
            "read": round(read - started, 3),
            "archive_and_reset": round(caught_up - read, 3),
            "rank": round(finished - caught_up, 3),
        },
    )


# -- archived leaderboards ----------------------------------------------------------------


async def _ended(session: AsyncSession, mode: str, season: str) -> Season | None:
    """The ended season `season` of the mode; None when it is the current one; 404 when the
    mode has no such season."""
    found = await modes.find_mode(session, mode)
    if found is None:
        raise UnknownMode(mode)
    rows = await repository.seasons(session, mode)
    named = next((s for s in rows if s.name == season), None)
    if named is None and season == FIRST_SEASON and not rows:
        return None
    if named is None:
        raise NotFound(f"mode {mode!r} has no season {season!r}")
    if named.ended_at is not None and named.ranked is None:
        raise ServiceUnavailable(
            f"season {season!r} of {mode!r} is being archived; its job says when it is done"
        )
    return None if named.ended_at is None else named


async def find(session: AsyncSession, mode: str, season: str) -> Season | None:
    return await _ended(session, mode, season)


async def leaderboard(
    session: AsyncSession, mode: str, season: str, limit: int, cursor: str | None
) -> LeaderboardPage:
    """The leaderboard of `season`: an ended season's as archived, the current one's live."""
    ended = await find(session, mode, season)
    if ended is None:
        return await leaderboards.leaderboard(session, mode, limit, cursor)
    return await _archived_page(session, ended, limit, cursor)


async def standing(session: AsyncSession, mode: str, season: str, player_id: str, around: int) -> Standing:
    """A player's standing in `season`: as archived when it ended, live for the current one."""
    ended = await find(session, mode, season)
    if ended is None:
        return await leaderboards.standing(session, mode, player_id, around)
    return await _archived_standing(session, ended, player_id, around)


async def _archived_page(
    session: AsyncSession, season: Season, limit: int, cursor: str | None
) -> LeaderboardPage:
    after = 0 if cursor is None else pagination.decode_values(cursor, (int,))[0]
    rows = await repository.page(session, season.id, after, limit + 1)
    page = rows[:limit]
    more = len(rows) > limit
    return LeaderboardPage(
        entries=[leaderboards.entry(r.rank, r.row) for r in page],
        next_cursor=pagination.encode_values([page[-1].rank]) if more else None,
    )


async def _archived_standing(session: AsyncSession, season: Season, player_id: str, around: int) -> Standing:
    found = await repository.standing(session, season.id, player_id, around)
    if found is None:
        raise NotFound(f"player {player_id!r} has no rating in season {season.name!r} of {season.mode!r}")
    me, rank, rows = found
    if rank is None:
        raise NotFound(
            f"player {player_id!r} was not on the leaderboard of season {season.name!r}: "
            f"{me.matches} matches of the {season.min_matches} it needed"
        )
    total = int(season.ranked or 0)
    return Standing(
        rank=rank,
        total=total,
        percentile=100.0 * (total - rank) / total,
        entries=[leaderboards.entry(r.rank, r.row) for r in rows],
    )


# -- replay ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """What a replay of the current season leaves out, and where its players start."""

    past: set[int] = field(default_factory=set)  # match keys of ended seasons
    starts: dict[str, tuple[float, float]] = field(default_factory=dict)  # reset ratings


async def replay_scope(session: AsyncSession, mode: str) -> ReplayScope:
    """A replay re-rates the current season only: its matches, each player starting from
    the reset of their archived rating (or their seed, or the prior, when not archived).
    The caller completes the last switch first (`complete`)."""
    rows = await repository.seasons(session, mode)
    current = next((s for s in rows if s.ended_at is None), None)
    previous = next((s for s in rows if s.ended_at is not None), None)
    if current is None or previous is None:
        return ReplayScope()
    return ReplayScope(
        past=await repository.past_matches(session, mode, current.start_seq),
        starts=await repository.starts(session, mode, previous.id, current.pull, current.widen),
    )
