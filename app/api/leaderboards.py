"""Leaderboards (read): ordered by mu − k·sigma, exact right after every write."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app import pagination
from app.api.deps import ReadKey, SessionDep
from app.ids import Identifier
from app.leaderboards import service
from app.leaderboards.schemas import LeaderboardPage, Standing

router = APIRouter(prefix="/v1/leaderboards", tags=["leaderboards"])


@router.get("/{mode}", operation_id="get_leaderboard", response_model=LeaderboardPage)
async def get_leaderboard(
    mode: Identifier,
    session: SessionDep,
    _: ReadKey,
    limit: Annotated[int, Query(ge=1, le=pagination.MAX_LIMIT)] = pagination.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> LeaderboardPage:
    """Players with at least the mode's minimum of matches, by conservative rating
    descending, ties by player id."""
    return await service.leaderboard(session, mode, limit, cursor)


@router.get("/{mode}/players/{player_id}", operation_id="get_leaderboard_standing", response_model=Standing)
async def get_standing(
    mode: Identifier,
    player_id: Identifier,
    session: SessionDep,
    _: ReadKey,
    around: Annotated[int, Query(ge=0, le=100)] = 5,
) -> Standing:
    """The player's exact rank, the leaderboard's size, and `around` neighbours each side.
    404 when the player is not on the leaderboard (no rating, or too few matches)."""
    return await service.standing(session, mode, player_id, around)
