"""The matchmaking queue of a mode (matchmaking scope)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import MatchmakingKey, RedisDep, SessionDep
from app.ids import Identifier
from app.queues import service
from app.queues.schemas import (
    MatchmakeIn,
    MatchmakeOut,
    QueueStats,
    TicketBatchIn,
    TicketBatchOut,
    TicketCreated,
    TicketIn,
    TicketOut,
)

router = APIRouter(prefix="/v1/queues", tags=["matchmaking queue"])


@router.post(
    "/{mode}/tickets",
    operation_id="create_ticket",
    status_code=status.HTTP_201_CREATED,
    response_model=TicketCreated,
    responses={409: {"description": "A player already holds an active ticket in this mode"}},
)
async def create_ticket(
    mode: Identifier, body: TicketIn, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> TicketCreated:
    """Queue a player or a party. Ratings are read now; unseen players start at the mode's
    prior. A player holds at most one active ticket per mode (409 otherwise)."""
    return await service.create_ticket(session, redis, mode, body)


@router.post("/{mode}/tickets/batch", operation_id="create_tickets", response_model=TicketBatchOut)
async def create_tickets(
    mode: Identifier, body: TicketBatchIn, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> Response:
    """Queue up to 1,000 tickets in one request, each as POST /tickets would. Every ticket has
    its own outcome: queued, or rejected when one of its players already holds an active
    ticket in the mode (an earlier ticket of the batch counts). A malformed ticket (422)
    rejects the whole batch, and nothing is queued."""
    content = await service.create_tickets(session, redis, mode, body)
    return Response(content, media_type="application/json")


@router.get("/{mode}/tickets/{ticket_id}", operation_id="get_ticket", response_model=TicketOut)
async def get_ticket(
    mode: Identifier, ticket_id: Identifier, redis: RedisDep, _: MatchmakingKey
) -> TicketOut:
    """A ticket's status (queued, matched, cancelled or expired) and its match."""
    return await service.get_ticket(redis, mode, ticket_id)


@router.delete(
    "/{mode}/tickets/{ticket_id}",
    operation_id="cancel_ticket",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={409: {"description": "The ticket was already matched"}},
)
async def cancel_ticket(
    mode: Identifier, ticket_id: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> Response:
    """Leave the queue; 409 if the ticket was already matched."""
    await service.cancel_ticket(session, redis, mode, ticket_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/{mode}/matchmake", operation_id="matchmake", response_model=MatchmakeOut)
async def matchmake(
    mode: Identifier, body: MatchmakeIn, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> Response:
    """Form up to max_matches matches of the mode's shape, best draw quality first. Each
    is claimed atomically: no ticket is ever in two proposals."""
    # The proposals' JSON, as stored on their tickets: built once, sent as is.
    content = await service.matchmake(session, redis, mode, body.max_matches)
    return Response(content, media_type="application/json")


@router.get("/{mode}", operation_id="queue_stats", response_model=QueueStats)
async def queue_stats(
    mode: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> QueueStats:
    """Waiting tickets and players, and the longest wait."""
    return await service.stats(session, redis, mode)
