"""What each ops page shows, gathered from the services the API uses.

Each function returns the template context of one page. Redis being down costs only the
queue figures: the page says so and still shows everything that lives in PostgreSQL.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import NotFound
from app.ids import ModeScope
from app.infra.redis_client import UNAVAILABLE, RedisClient
from app.jobs import service as jobs
from app.leaderboards import service as leaderboards
from app.modes import service as modes
from app.players import service as players
from app.queues import service as queues
from app.queues.schemas import QueueStats
from app.seasons import service as seasons
from app.ui.bars import tier_bars
from app.ui.plot import Point, plot

LEADERBOARD_PAGE = 50
RECENT_MATCHES = 20
QUEUE_TIMEOUT_S = 1.0


async def _queue(session: AsyncSession, redis: RedisClient, mode: str) -> QueueStats | None:
    """The mode's queue figures; None when Redis does not answer in time."""
    # The mode's rules first, outside the time limit (then a cache hit inside it): a statement
    # cancelled half way leaves the session's transaction unusable, and the rest of the page
    # failed with it (a 500 whenever the database took longer than the limit).
    await modes.resolve(session, mode)
    try:
        async with asyncio.timeout(QUEUE_TIMEOUT_S):
            return await queues.stats(session, redis, mode)
    except UNAVAILABLE:  # TimeoutError is an OSError
        return None


async def modes_page(session: AsyncSession, redis: RedisClient, within: ModeScope) -> dict[str, Any]:
    """The modes `within` allows, with leaderboard sizes and queue figures."""
    sizes = await leaderboards.sizes(session)
    rows = [
        {
            "mode": mode,
            "on_leaderboard": sizes.get(mode.name, 0),
            "queue": await _queue(session, redis, mode.name),
        }
        for mode in await modes.list_modes(session, within)
    ]
    return {"rows": rows}


async def leaderboard_page(
    session: AsyncSession, redis: RedisClient, mode: str, cursor: str | None, season: str | None = None
) -> dict[str, Any]:
    """The live leaderboard, or with `season` an ended season's final one."""
    found = await modes.get_mode(session, mode)
    held = await seasons.of_mode(session, found)
    ended = None if season is None else await seasons.find(session, mode, season)
    if ended is None:
        page = await leaderboards.leaderboard(session, mode, LEADERBOARD_PAGE, cursor)
    else:
        page = await seasons.leaderboard(session, mode, ended.name, LEADERBOARD_PAGE, cursor)
    return {
        "mode": found,
        "page": page,
        "season": held.season,
        "past_seasons": held.past_seasons,
        "viewing": ended,
        "on_leaderboard": ended.ranked if ended is not None else await leaderboards.size(session, mode),
        "queue": await _queue(session, redis, mode),
        "is_first": cursor is None,
        # The live tier distribution (the counts every write keeps exact), on the live board.
        "tiers": None
        if ended is not None
        else tier_bars([(t.name, t.players) for t in (await leaderboards.tier_counts(session, mode)).tiers]),
    }


async def _smooth_note(session: AsyncSession, job_id: str | None) -> dict[str, Any] | None:
    """How far the smoothed curve's job got: sweeps, the tolerance reached, whether the
    iteration cap stopped it (None without a smooth job, or for one that left no result)."""
    if job_id is None:
        return None
    try:
        job = await jobs.get(session, job_id)
    except NotFound:
        return None
    result = job.result or {}
    if "iterations" not in result:
        return None
    return {
        "iterations": result["iterations"],
        "tolerance": result.get("tolerance"),
        "epsilon": result.get("epsilon"),
        "capped": result.get("capped"),
    }


async def player_page(
    session: AsyncSession, player_id: str, mode: str | None, within: ModeScope
) -> dict[str, Any]:
    """The player in `mode`, or in the first of their modes `within` allows."""
    player = await players.get_player(session, player_id, within)
    rated = [r.mode for r in player.ratings]
    chosen = mode or (rated[0] if rated else None)
    if chosen is None:
        raise NotFound(f"player {player_id!r} has no rating in any mode")
    curve = await players.learning_curve(session, player_id, chosen)
    online = [Point(p.t, p.mu, p.sigma) for p in curve.online]
    smoothed = [Point(p.t, p.mu, p.sigma) for p in curve.smoothed or []]
    try:
        standing = await leaderboards.standing(session, chosen, player_id, 0)
    except NotFound:
        standing = None  # unrated in this mode, or below the leaderboard's minimum
    matches = await players.player_matches(session, player_id, chosen, RECENT_MATCHES, None)
    return {
        "smooth": await _smooth_note(session, curve.smoothed_by_job),
        "player": player,
        "mode": chosen,
        "modes": rated,
        "rating": next((r for r in player.ratings if r.mode == chosen), None),
        "standing": standing,
        "curve": curve,
        "plot": plot([("online rating", "online", online), ("smoothed (TTT)", "smoothed", smoothed)]),
        "matches": matches.matches,
    }
