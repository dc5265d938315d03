"""Use cases for players: profile, match history, rating overrides."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app import metrics, pagination
from app.db.commit_hooks import after_commit
from app.errors import NotFound, ValidationFailed
from app.ids import EVERY_MODE, ModeScope
from app.jobs.smooth import at_day
from app.matches.schemas import Placement
from app.modes import service as modes
from app.players import repository
from app.players.schemas import (
    CurvePoint,
    Drift,
    LearningCurve,
    ModeRating,
    PlayerMatch,
    PlayerMatches,
    PlayerOut,
    RatingSet,
)
from app.rating import conservative
from app.rating.drift import drifted_sigma
from app.rating.tiers import displayed
from app.schemas import RatingOut
from app.seasons import repository as seasons


def _rating(mu: float, sigma: float, k: float) -> RatingOut:
    return RatingOut(mu=mu, sigma=sigma, conservative=conservative(mu, sigma, k))


def _whole(number: float) -> int | float:
    """A stored rank as the client wrote it: ranks are stored as doubles (a score's rank is
    minus the score), so 2 comes back 2.0; an integer goes out as one."""
    return int(number) if number.is_integer() else number


async def get_player(session: AsyncSession, player_id: str, within: ModeScope = EVERY_MODE) -> PlayerOut:
    """The player's ratings in the modes `within` allows; 404 for a player never seen."""
    rows = await repository.ratings(session, player_id)
    if not rows and not await repository.exists(session, player_id):
        raise NotFound(f"no player {player_id!r}")
    rows = [r for r in rows if within.allows(r.mode)]
    return PlayerOut(player_id=player_id, ratings=[_mode_rating(r) for r in rows])


def _mode_rating(r: Any) -> ModeRating:
    """A stored rating as read now: drifted over the time since the last match (seed 001 eq. 4),
    with its placement and tier."""
    days = 0.0
    if r.last_played_at is not None:
        days = max((r.read_at - r.last_played_at) / dt.timedelta(days=1), 0.0)
    sigma = drifted_sigma(r.sigma, r.drift_per_day, days)
    rating = _rating(r.mu, sigma, r.conservative_k)
    of = r.min_matches_for_leaderboard
    return ModeRating(
        mode=r.mode,
        rating=rating,
        matches=r.matches,
        wins=r.wins,
        losses=r.losses,
        draws=r.draws,
        last_played_at=r.last_played_at,
        displayed=displayed(rating.conservative, r.display_scale, r.display_offset),
        provisional=r.matches < of,
        placement=Placement(played=min(r.matches, of), of=of) if of > 0 else None,
        tier=r.tiers[r.tier]["name"] if r.tier is not None and r.tiers and r.tier < len(r.tiers) else None,
        drift=Drift(days=days, sigma_at_last_match=r.sigma) if r.drift_per_day > 0 else None,
    )


async def player_matches(
    session: AsyncSession,
    player_id: str,
    mode: str | None,
    limit: int,
    cursor: str | None,
    within: ModeScope = EVERY_MODE,
) -> PlayerMatches:
    """A page of the player's matches: of `mode`, or of every mode `within` allows."""
    if not await repository.exists(session, player_id):
        raise NotFound(f"no player {player_id!r}")
    before = None
    if cursor is not None:
        seq, pk = pagination.decode_values(cursor, (int, int))
        before = (seq, pk)
    rows = await repository.history(session, player_id, mode, before, limit + 1, within.like_patterns())
    page = rows[:limit]
    return PlayerMatches(
        matches=[
            PlayerMatch(
                match_id=r.match_id,
                mode=r.mode,
                played_at=r.played_at,
                team=r.team,
                rank=_whole(r.rank),
                weight=r.weight,
                void=r.void,
                before=_rating(r.mu_before, r.sigma_before, r.conservative_k),
                after=_rating(r.mu_after, r.sigma_after, r.conservative_k),
            )
            for r in page
        ],
        next_cursor=pagination.encode_values([page[-1].seq, page[-1].match_pk])
        if len(rows) > limit
        else None,
    )


async def set_rating(session: AsyncSession, player_id: str, mode: str, body: RatingSet) -> PlayerOut:
    await modes.get_mode(session, mode)  # 404 for an unknown mode
    # A row still in the last season is archived first; the new value is this season's.
    await seasons.catch_up(session, mode, [player_id])
    await repository.set_rating(session, player_id, mode, body.mu, body.sigma)
    after_commit(session, metrics.RATINGS_WRITTEN.labels(mode, "admin").inc)
    return await get_player(session, player_id)


async def learning_curve(
    session: AsyncSession, player_id: str, mode: str | None, within: ModeScope = EVERY_MODE
) -> LearningCurve:
    """The player's curves in `mode`; without one, in the only mode `within` allows that the
    player is rated in."""
    if mode is None:
        mode = await _only_rated_mode(session, player_id, within)
    await modes.get_mode(session, mode)  # 404 for an unknown mode
    if not await repository.exists(session, player_id):
        raise NotFound(f"no player {player_id!r}")
    online = [
        CurvePoint(t=r.played_at, mu=r.mu_after, sigma=r.sigma_after)
        for r in await repository.online_curve(session, player_id, mode)
    ]
    row = await repository.smoothed_curve(session, player_id, mode)
    smoothed = None
    if row is not None:
        smoothed = [
            CurvePoint(t=at_day(d), mu=mu, sigma=sigma)
            for d, mu, sigma in zip(row.days, row.mu, row.sigma, strict=True)
        ]
    return LearningCurve(
        player_id=player_id,
        mode=mode,
        online=online,
        smoothed=smoothed,
        smoothed_by_job=None if row is None else row.job_id,
    )


# A 422 names at most this many of the player's modes.
MODES_NAMED = 10


async def _only_rated_mode(session: AsyncSession, player_id: str, within: ModeScope) -> str:
    """The one mode `within` allows that the player has a rating in; 404 with none, 422 naming
    them with several (a curve from a guessed mode would be a silent empty answer)."""
    rated = [row.mode for row in await repository.ratings(session, player_id) if within.allows(row.mode)]
    if len(rated) == 1:
        return str(rated[0])
    if not rated:
        if not await repository.exists(session, player_id):
            raise NotFound(f"no player {player_id!r}")
        raise NotFound(f"player {player_id!r} has no rating in any mode")
    named = ", ".join(rated[:MODES_NAMED]) + (
        f" and {len(rated) - MODES_NAMED} more" if len(rated) > MODES_NAMED else ""
    )
    message = f"player {player_id!r} is rated in {len(rated)} modes ({named}): name one"
    raise ValidationFailed(f"query.mode: {message}", errors=[{"loc": ["query", "mode"], "msg": message}])
