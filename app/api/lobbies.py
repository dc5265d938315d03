"""Lobbies (matchmaking scope): evaluate a proposed lobby, or balance players into teams."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import MatchmakingKey, SessionDep
from app.auth.service import require_mode
from app.lobbies import service
from app.lobbies.schemas import BalanceIn, BalanceOut, EvaluateIn, EvaluateOut

router = APIRouter(prefix="/v1/lobbies", tags=["lobbies"])


@router.post("/evaluate", operation_id="evaluate_lobby", response_model=EvaluateOut)
async def evaluate_lobby(body: EvaluateIn, session: SessionDep, key: MatchmakingKey) -> EvaluateOut:
    """Draw quality and per-team win probabilities of a proposed lobby. Players the mode
    has not seen count at its prior."""
    require_mode(key, body.mode)
    return await service.evaluate(session, body)


@router.post("/balance", operation_id="balance_lobby", response_model=BalanceOut)
async def balance_lobby(body: BalanceIn, session: SessionDep, key: MatchmakingKey) -> BalanceOut:
    """The highest-quality split into `teams` teams of equal size (as equal as the count
    allows), parties kept together. Exact up to 12 players; a measured heuristic above."""
    require_mode(key, body.mode)
    return await service.balance_lobby(session, body)
