"""Players: profiles and histories (read), rating overrides (admin)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from app import pagination
from app.api.deps import AdminKey, ReadKey, RedisDep, SessionDep
from app.auth.service import require_every_mode, require_mode
from app.erasure import service as erasure
from app.ids import Identifier, PlayerId
from app.players import service
from app.players.schemas import LearningCurve, PlayerMatches, PlayerOut, RatingSet

router = APIRouter(prefix="/v1/players", tags=["players"])


@router.get("/{player_id}", operation_id="get_player", response_model=PlayerOut)
async def get_player(player_id: Identifier, session: SessionDep, key: ReadKey) -> PlayerOut:
    """A player's rating and counters in every mode (for a key limited to modes, in those
    modes); 404 if unknown."""
    return await service.get_player(session, player_id, key.modes)


@router.get("/{player_id}/matches", operation_id="get_player_matches", response_model=PlayerMatches)
async def get_player_matches(
    player_id: Identifier,
    session: SessionDep,
    key: ReadKey,
    mode: Annotated[Identifier | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=pagination.MAX_LIMIT)] = pagination.DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=64)] = None,
) -> PlayerMatches:
    """The player's matches, most recently recorded first, with before/after ratings. For a
    key limited to modes: those modes' matches, and a `mode` outside them is a 403."""
    if mode is not None:
        require_mode(key, mode)
    return await service.player_matches(session, player_id, mode, limit, cursor, key.modes)


@router.get("/{player_id}/learning-curve", operation_id="get_learning_curve", response_model=LearningCurve)
async def get_learning_curve(
    player_id: Identifier,
    session: SessionDep,
    key: ReadKey,
    mode: Annotated[
        Identifier | None,
        Query(description="default: the only mode the player is rated in (422 naming them when several)"),
    ] = None,
) -> LearningCurve:
    """The player's online ratings after each match, and the smoothed TrueSkill Through
    Time curve from the mode's last smooth job (null before one has run). Without `mode`,
    the only mode the player is rated in; 422 naming the player's modes when there are several.
    For a key limited to modes: a `mode` outside them is a 403, and only its modes count."""
    if mode is not None:
        require_mode(key, mode)
    return await service.learning_curve(session, player_id, mode, key.modes)


@router.put("/{player_id}/ratings/{mode}", operation_id="put_player_rating", response_model=PlayerOut)
async def put_player_rating(
    player_id: PlayerId, mode: Identifier, body: RatingSet, session: SessionDep, _: AdminKey
) -> PlayerOut:
    """Seed or override a rating (for migrations from other systems); counters are kept."""
    return await service.set_rating(session, player_id, mode, body)


@router.delete("/{player_id}", operation_id="delete_player", status_code=status.HTTP_204_NO_CONTENT)
async def delete_player(
    player_id: Identifier, session: SessionDep, redis: RedisDep, key: AdminKey
) -> Response:
    """Erase a player (GDPR art. 17): ratings, learning curves and tickets go, and their matches,
    proposals and backfill rosters name a pseudonym instead. 204, also when there was nothing to
    erase. An erasure covers every mode: a key limited to modes gets 403."""
    require_every_mode(key, "erasing a player")
    await erasure.erase_player(session, redis, player_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
