"""The matchmaking queue of a mode (matchmaking scope)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from starlette.types import Receive, Scope, Send

from app.api.deps import MatchmakingKey, RedisDep, SessionDep, TicketWatchDep
from app.ids import Identifier
from app.queues import backfills, service
from app.queues.schemas import (
    MAX_WAIT_SECONDS,
    SEEN_PATTERN,
    AnswerIn,
    BackfillIn,
    BackfillOut,
    BackfillUpdate,
    MatchmakeIn,
    MatchmakeOut,
    ProposalDetail,
    QueueStatistics,
    QueueStats,
    RequeueIn,
    RequeueOut,
    TicketBatchIn,
    TicketBatchOut,
    TicketCreated,
    TicketIn,
    TicketOut,
)

router = APIRouter(prefix="/v1/queues", tags=["matchmaking queue"])

JSON = "application/json"


class DeferredJson(Response):
    """A JSON response whose body is made as it is sent. FastAPI closes the request's
    function-scoped dependencies (the key check's database session among them) before it
    sends the response, so a long-poll waiting here holds no database connection."""

    def __init__(self, make: Callable[[], Awaitable[bytes]]) -> None:
        super().__init__(media_type=JSON)
        self._make = make

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.body = await self._make()
        self.init_headers()
        await super().__call__(scope, receive, send)


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
    mode: Identifier,
    ticket_id: Identifier,
    redis: RedisDep,
    watch: TicketWatchDep,
    _: MatchmakingKey,
    wait: Annotated[
        float | None,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            allow_inf_nan=False,
            description="long-poll: answer as soon as the ticket moves on from `seen` (or from "
            "where it stands when the poll starts), or after this many seconds (at most 60) as it "
            "is then",
        ),
    ] = None,
    seen: Annotated[
        str | None,
        Query(
            pattern=SEEN_PATTERN,
            description="with `wait`: where the client last saw the ticket, `queued` or the id of "
            "the pending proposal it was in; the poll answers at once when the ticket is no "
            "longer there",
        ),
    ] = None,
) -> Response:
    """A ticket's status (queued, matched, cancelled or expired) and its match. With `wait`,
    a long-poll: the answer comes once the ticket moves on from `seen` (queued, or in that
    pending proposal) by any instance of the service, or when the wait is over."""
    if not wait:
        return Response(await service.get_ticket(redis, mode, ticket_id), media_type=JSON)
    return DeferredJson(lambda: service.wait_for_ticket(redis, watch, mode, ticket_id, wait, seen))


@router.get(
    "/{mode}/players/{player_id}/ticket",
    operation_id="get_player_ticket",
    response_model=TicketOut,
    responses={404: {"description": "The player holds no active ticket in this mode"}},
)
async def get_player_ticket(
    mode: Identifier, player_id: Identifier, redis: RedisDep, _: MatchmakingKey
) -> TicketOut:
    """The player's active ticket: queued, or matched in a proposal that stands (not
    requeued). A player who queued again after a match gets the new ticket; 404 when the
    player holds none (never queued, or cancelled, expired, cancelled by a requeue)."""
    return await service.player_ticket(redis, mode, player_id)


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
    mode: Identifier,
    session: SessionDep,
    redis: RedisDep,
    _: MatchmakingKey,
    body: MatchmakeIn | None = None,
) -> Response:
    """Serve the mode's backfills (fills of kind "backfill", oldest backfill first), then form
    matches of the mode's shape, best draw quality first: up to max_matches proposals in all,
    fills first. Each is claimed atomically: no ticket is ever in two proposals. No body means
    the defaults. Under the mode's latency rule each match names its `region`."""
    # The proposals' JSON, as stored on their tickets: built once, sent as is.
    content = await service.matchmake(session, redis, mode, (body or MatchmakeIn()).max_matches)
    return Response(content, media_type=JSON)


@router.post(
    "/{mode}/backfills",
    operation_id="create_backfill",
    status_code=status.HTTP_201_CREATED,
    response_model=BackfillOut,
    responses={409: {"description": "A player is on another backfill's roster or holds an active ticket"}},
)
async def create_backfill(
    mode: Identifier, body: BackfillIn, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> BackfillOut:
    """A game running or about to start whose open slots the queue fills: each matchmaking
    call serves backfills before it forms new matches. Teams hold at most the mode's
    team_size; the roster's ratings are read as a ticket's are. The backfill lives `ttl_s`
    seconds unless deleted first."""
    return await backfills.create_backfill(session, redis, mode, body)


_BACKFILL_ERRORS: dict[int | str, dict[str, object]] = {404: {"description": "No such backfill in this mode"}}


@router.get(
    "/{mode}/backfills/{backfill_id}",
    operation_id="get_backfill",
    response_model=BackfillOut,
    responses=_BACKFILL_ERRORS,
)
async def get_backfill(
    mode: Identifier,
    backfill_id: Identifier,
    session: SessionDep,
    redis: RedisDep,
    watch: TicketWatchDep,
    _: MatchmakingKey,
    wait: Annotated[
        float | None,
        Query(
            ge=0,
            le=MAX_WAIT_SECONDS,
            allow_inf_nan=False,
            description="long-poll: answer as soon as the backfill's version moves on (a fill, a new "
            "roster), or after this many seconds (at most 60) as it is then",
        ),
    ] = None,
) -> Response:
    """A backfill: its roster (with the players of fills not failed), the players whose ready
    check runs, its open slots and version. With `wait`, a long-poll that answers when the
    backfill is filled (by any instance of the service) or changed."""
    if not wait:
        found = await backfills.get_backfill(session, redis, mode, backfill_id)
        return Response(found.model_dump_json(), media_type=JSON)
    return DeferredJson(await backfills.backfill_poll(session, redis, watch, mode, backfill_id, wait))


@router.put(
    "/{mode}/backfills/{backfill_id}",
    operation_id="replace_backfill",
    response_model=BackfillOut,
    responses={
        404: {"description": "No such backfill in this mode"},
        409: {"description": "The backfill moved past `version`, or a new player is taken elsewhere"},
    },
)
async def replace_backfill(
    mode: Identifier,
    backfill_id: Identifier,
    body: BackfillUpdate,
    session: SessionDep,
    redis: RedisDep,
    _: MatchmakingKey,
) -> BackfillOut:
    """A new roster: players left or joined. It replaces the whole roster (pending fills'
    players stay only if listed) and raises the version."""
    return await backfills.replace_roster(session, redis, mode, backfill_id, body)


@router.delete(
    "/{mode}/backfills/{backfill_id}",
    operation_id="delete_backfill",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=_BACKFILL_ERRORS,
)
async def delete_backfill(
    mode: Identifier, backfill_id: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> Response:
    """The game ended or is full: no more fills."""
    await backfills.delete_backfill(session, redis, mode, backfill_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/{mode}/proposals/{proposal_id}/requeue",
    operation_id="requeue_proposal",
    response_model=RequeueOut,
    responses={
        404: {"description": "No such proposal in this mode"},
        409: {"description": "The proposal was already requeued"},
    },
)
async def requeue_proposal(
    mode: Identifier,
    proposal_id: Identifier,
    session: SessionDep,
    redis: RedisDep,
    _: MatchmakingKey,
    body: RequeueIn | None = None,
) -> RequeueOut:
    """A proposal fell through (a player declined, no server started): the listed tickets
    are cancelled, and every other ticket of the proposal queues again with its original
    enqueue time, so it keeps its wait and its relaxed thresholds. Atomic; each ticket's
    status says what happened (a ticket past its TTL expires; one whose player holds a newer
    ticket is cancelled). A second requeue of the proposal is a 409."""
    return await service.requeue(session, redis, mode, proposal_id, body or RequeueIn())


@router.get(
    "/{mode}/proposals/{proposal_id}",
    operation_id="get_proposal",
    response_model=ProposalDetail,
    responses={404: {"description": "No such proposal in this mode"}},
)
async def get_proposal(
    mode: Identifier, proposal_id: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> ProposalDetail:
    """A proposal: its state (pending, accepted or failed), its ready check's deadline, and
    each player's answer so far."""
    return await service.get_proposal(session, redis, mode, proposal_id)


_ANSWER_ERRORS: dict[int | str, dict[str, object]] = {
    404: {"description": "No such proposal in this mode"},
    409: {"description": "The proposal has settled, and a player's answer differs from theirs"},
    422: {"description": "A player is not in the proposal"},
}


@router.post(
    "/{mode}/proposals/{proposal_id}/accept",
    operation_id="accept_proposal",
    response_model=ProposalDetail,
    responses=_ANSWER_ERRORS,
)
async def accept_proposal(
    mode: Identifier,
    proposal_id: Identifier,
    body: AnswerIn,
    session: SessionDep,
    redis: RedisDep,
    _: MatchmakingKey,
) -> ProposalDetail:
    """The listed players accept the proposal (a party may answer for several). Once every
    player has accepted, it is `accepted`: start the game. The same answer again is 200."""
    return await service.answer_proposal(session, redis, mode, proposal_id, body, "accepted")


@router.post(
    "/{mode}/proposals/{proposal_id}/decline",
    operation_id="decline_proposal",
    response_model=ProposalDetail,
    responses=_ANSWER_ERRORS,
)
async def decline_proposal(
    mode: Identifier,
    proposal_id: Identifier,
    body: AnswerIn,
    session: SessionDep,
    redis: RedisDep,
    _: MatchmakingKey,
) -> ProposalDetail:
    """The listed players decline the proposal: it fails at once. The tickets of players who
    did not accept are cancelled, and every other ticket queues again with its original
    enqueue time, in one atomic step. The same answer again is 200."""
    return await service.answer_proposal(session, redis, mode, proposal_id, body, "declined")


@router.get("/{mode}/stats", operation_id="queue_statistics", response_model=QueueStatistics)
async def queue_statistics(
    mode: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> Response:
    """Tickets and players waiting, by region; and per window of the last 1, 5 and 15
    minutes, the matches formed, the p50, p90 and p99 time to match of their tickets and the
    p10, p50 and p90 draw quality. Shared by every instance; cheap to read (no walk of the pool)."""
    return Response(await service.queue_statistics(session, redis, mode), media_type=JSON)


@router.get("/{mode}", operation_id="queue_stats", response_model=QueueStats)
async def queue_stats(
    mode: Identifier, session: SessionDep, redis: RedisDep, _: MatchmakingKey
) -> QueueStats:
    """Waiting tickets and players, and the longest wait."""
    return await service.stats(session, redis, mode)
