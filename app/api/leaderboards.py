"""Leaderboards (read): ordered by mu − k·sigma, exact right after every write."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app import pagination
from app.api.deps import ReadKey, SessionDep
from app.errors import ValidationFailed
from app.ids import Identifier
from app.leaderboards import service
from app.leaderboards.schemas import LeaderboardPage, Standing
from app.seasons import service as seasons

router = APIRouter(prefix="/v1/leaderboards", tags=["leaderboards"])

SEASON = (
    "an ended season's name: its leaderboard as it stood at the switch (the current season's "
    "name, or none, reads the live one); 404 for a season the mode never had"
)


@router.get("/{mode}", operation_id="get_leaderboard", response_model=LeaderboardPage)
async def get_leaderboard(
    mode: Identifier,
    session: SessionDep,
    _: ReadKey,
    limit: Annotated[int, Query(ge=1, le=pagination.MAX_LIMIT)] = pagination.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    season: Annotated[Identifier | None, Query(description=SEASON)] = None,
    tier: Annotated[
        str | None,
        Query(
            max_length=64, description="one tier's players, ranked within it (422 for a tier the mode lacks)"
        ),
    ] = None,
) -> LeaderboardPage:
    """Players with at least the mode's minimum of matches, by conservative rating
    descending, ties by player id. With `season`, an ended season's final leaderboard; with
    `tier`, the live leaderboard's players of that tier, ranked from 1 within it."""
    if season is None:
        return await service.leaderboard(session, mode, limit, cursor, tier)
    if tier is not None:
        msg = "tier pages read the live leaderboard: give season or tier, not both"
        raise ValidationFailed(f"query.tier: {msg}", errors=[{"loc": ["query", "tier"], "msg": msg}])
    return await seasons.leaderboard(session, mode, season, limit, cursor)


@router.get("/{mode}/players/{player_id}", operation_id="get_leaderboard_standing", response_model=Standing)
async def get_standing(
    mode: Identifier,
    player_id: Identifier,
    session: SessionDep,
    _: ReadKey,
    around: Annotated[int, Query(ge=0, le=100)] = 5,
    season: Annotated[Identifier | None, Query(description=SEASON)] = None,
) -> Standing:
    """The player's exact rank, the leaderboard's size, and `around` neighbours each side.
    404 when the player is not on the leaderboard (no rating, or too few matches)."""
    if season is None:
        return await service.standing(session, mode, player_id, around)
    return await seasons.standing(session, mode, season, player_id, around)
