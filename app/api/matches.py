"""Match results: game backends post them (results:write), ops read and void them."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import AdminKey, ReadKey, ResultsKey, SessionDep
from app.ids import Identifier
from app.matches import service
from app.matches.schemas import MatchIn, MatchOut

router = APIRouter(prefix="/v1/matches", tags=["matches"])


@router.post(
    "",
    operation_id="post_match",
    status_code=status.HTTP_201_CREATED,
    response_model=MatchOut,
    responses={
        200: {"model": MatchOut, "description": "Already recorded: the stored response"},
        409: {"description": "The match id was used for a different match"},
    },
)
async def post_match(body: MatchIn, session: SessionDep, _: ResultsKey) -> Response:
    """Rate a finished match in one transaction, exactly once per match_id. Players the
    mode has not seen start at its prior. The same match again returns 200 and the stored
    response, byte for byte but for `created`: the same mode, teams, players, ranks (a score
    counts as its negated rank), weights and coefficients, in any player order within a
    team, and `played_at` at the same instant in any offset, or omitted. Any other
    difference under a used match_id returns 409."""
    result = await service.record_match(session, body)
    # The response is the stored JSON, sent as is (it was built and validated once).
    return Response(result.json, status_code=201 if result.created else 200, media_type="application/json")


@router.get(
    "/{match_id}",
    operation_id="get_match",
    response_model=MatchOut,
    responses={409: {"description": "Imported and not rated yet (a replay job rates it)"}},
)
async def get_match(match_id: Identifier, session: SessionDep, _: ReadKey) -> MatchOut:
    """The stored result of a match."""
    return await service.get_match(session, match_id)


@router.post(
    "/{match_id}/void",
    operation_id="void_match",
    response_model=MatchOut,
    responses={409: {"description": "Imported and not rated yet (a replay job rates it)"}},
)
async def void_match(match_id: Identifier, session: SessionDep, _: AdminKey) -> MatchOut:
    """Mark a match void. Ratings are corrected by the next replay job."""
    return await service.void_match(session, match_id)
