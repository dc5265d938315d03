"""Seasons of a mode: start one (a job), read the current and past ones, their archived
leaderboards, and what a replay of the current season starts from.

A switch is one transaction under the mode's exclusive lock: match posts of the mode wait
for it (never fail, while it stays under the statement timeout) and land wholly on one
side. Under the lock it reads the applied_seq high-water mark (the boundary), archives the
ratings with their ranks, and resets them with one set-based UPDATE each.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import metrics, pagination
from app.db.bulk import unbounded
from app.db.commit_hooks import after_commit
from app.db.models import Mode, Season
from app.errors import Conflict, NotFound
from app.jobs import repository as jobs
from app.jobs.schemas import JobAccepted
from app.leaderboards import repository as leaderboards
from app.leaderboards.repository import Row
from app.leaderboards.schemas import Entry, LeaderboardPage, Standing
from app.matches.schemas import RatingOut
from app.modes import service as modes
from app.seasons import repository
from app.seasons.schemas import FIRST_SEASON, ModeSeasons, SeasonIn, SeasonOut

JOB_KIND = "season"

_PENDING = text("""
    SELECT 1 FROM jobs WHERE mode = :mode AND kind = 'season' AND status IN ('queued', 'running')
      AND params ->> 'name' = :name
""")


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


async def submit(session: AsyncSession, mode: str, body: SeasonIn) -> JobAccepted:
    """Queue the switch to season `body.name`; 409 when the mode has (or is starting) it."""
    found = await modes.get_mode(session, mode)  # 404 for an unknown mode
    taken = {s.name for s in await repository.seasons(session, mode)} | {FIRST_SEASON}
    pending = (await session.execute(_PENDING, {"mode": mode, "name": body.name})).first()
    if body.name in taken or pending is not None:
        raise Conflict(f"mode {found.name!r} already has (or is starting) a season {body.name!r}")
    job_id = str(uuid.uuid4())
    await jobs.create(session, job_id, mode, JOB_KIND, body.model_dump())
    return JobAccepted(job_id=job_id)


async def run_switch(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    params: dict[str, Any],
    report: Callable[[float], Awaitable[None]],
) -> dict[str, Any]:
    """Archive the current season and start `params["name"]` with its reset (the job)."""
    wanted = SeasonIn.model_validate(params)
    pull, widen = wanted.factors()
    started = time.perf_counter()
    async with sessions() as session, session.begin():
        await unbounded(session)
        await repository.stamp_unnumbered(session, mode)
    await report(0.1)
    async with sessions() as session, session.begin():
        await unbounded(session)
        await modes.get_mode(session, mode)
        await leaderboards.lock_mode(session, mode)
        locked = time.perf_counter()
        existing = await repository.seasons(session, mode)
        named = next((s for s in existing if s.name == wanted.name), None)
        if named is not None and named.ended_at is None:
            # This job again, after its process died between the commit and marking it done.
            return {
                "season": wanted.name,
                "already_started": True,
                "started_at": named.started_at.isoformat(),
            }
        if named is not None or wanted.name == FIRST_SEASON:
            raise Conflict(f"mode {mode!r} already has a season {wanted.name!r}")
        boundary = await repository.high_water(session)
        current = next((s for s in existing if s.ended_at is None), None)
        if current is None:
            await repository.first_season(session, mode, FIRST_SEASON)
        ending = FIRST_SEASON if current is None else current.name
        ordinal = 1 if current is None else current.ordinal + 1
        players, ranked = await repository.archive(session, mode, ending, boundary)
        await repository.start(session, mode, wanted.name, ordinal, wanted.reset, pull, widen, boundary)
        # Counting per statement is off: the reset moves every row, and the counts are
        # rebuilt from the reset ratings at once.
        await leaderboards.bulk(session, True)
        await repository.reset(session, mode, pull, widen)
        await leaderboards.recount(session, mode)
        after_commit(session, lambda: metrics.RATINGS_WRITTEN.labels(mode, "season").inc(players))
    finished = time.perf_counter()
    return {
        "season": wanted.name,
        "archived": ending,
        "reset": wanted.reset,
        "pull": pull,
        "widen": widen,
        "players": players,
        "ranked": ranked,
        "boundary_seq": boundary,
        "seconds": {"total": round(finished - started, 3), "locked": round(finished - locked, 3)},
    }


# -- archived leaderboards ----------------------------------------------------------------


async def _ended(session: AsyncSession, mode: str, season: str) -> Season | None:
    """The ended season `season` of the mode; None when it is the current one; 404 when the
    mode has no such season."""
    found = await modes.find_mode(session, mode)
    if found is None:
        raise modes.unknown_mode(mode)
    rows = await repository.seasons(session, mode)
    named = next((s for s in rows if s.name == season), None)
    if named is None and season == FIRST_SEASON and not rows:
        return None
    if named is None:
        raise NotFound(f"mode {mode!r} has no season {season!r}")
    return None if named.ended_at is None else named


def _entry(rank: int, row: Row) -> Entry:
    return Entry(
        rank=rank,
        player_id=row.player_id,
        rating=RatingOut(mu=row.mu, sigma=row.sigma, conservative=row.conservative),
        matches=row.matches,
    )


async def find(session: AsyncSession, mode: str, season: str) -> Season | None:
    return await _ended(session, mode, season)


async def leaderboard(
    session: AsyncSession, season: Season, limit: int, cursor: str | None
) -> LeaderboardPage:
    after = pagination.decode(cursor) or 0
    rows = await repository.page(session, season.mode, season.name, after, limit + 1)
    page = rows[:limit]
    more = len(rows) > limit
    return LeaderboardPage(
        entries=[_entry(r.rank, r.row) for r in page],
        next_cursor=pagination.encode(page[-1].rank) if more else None,
    )


async def standing(session: AsyncSession, season: Season, player_id: str, around: int) -> Standing:
    found = await repository.standing(session, season.mode, season.name, player_id, around)
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
        entries=[_entry(r.rank, r.row) for r in rows],
    )


# -- replay ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayScope:
    """What a replay of the current season leaves out, and where its players start."""

    past: set[int] = field(default_factory=set)  # match keys of ended seasons
    starts: dict[str, tuple[float, float]] = field(default_factory=dict)  # reset ratings


async def replay_scope(session: AsyncSession, mode: str) -> ReplayScope:
    """A replay re-rates the current season only: its matches, each player starting from
    the reset of their archived rating (or their seed, or the prior, when not archived)."""
    rows = await repository.seasons(session, mode)
    current = next((s for s in rows if s.ended_at is None), None)
    previous = next((s for s in rows if s.ended_at is not None), None)
    if current is None or previous is None:
        return ReplayScope()
    return ReplayScope(
        past=await repository.past_matches(session, mode, current.start_seq),
        starts=await repository.starts(session, mode, previous.name, current.pull, current.widen),
    )
