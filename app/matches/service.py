"""Matches as the API reads them: a posted match's meaning, and the stored results.

Recording a posted match is app.matches.recording's (the one pipeline).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, NotFound
from app.matches import repository
from app.matches.fingerprint import match_fingerprint
from app.matches.schemas import MatchIn, MatchOut


def body_hash(match: MatchIn) -> str:
    """The match's fingerprint (app.matches.fingerprint): tells a retry from a different match."""
    teams = [[(p.id, p.weight, p.coefficient) for p in team.players] for team in match.teams]
    return match_fingerprint(match.mode, teams, team_ranks(match))


def team_ranks(match: MatchIn) -> list[float]:
    """Each team's rank as the rating reads it: lower is better, a score counts as its negation."""
    if match.teams[0].rank is not None:
        return [float(t.rank) for t in match.teams]  # type: ignore[arg-type]
    return [-float(t.score) for t in match.teams]  # type: ignore[arg-type]


def _out(match_id: str, response: dict[str, Any], void: bool) -> MatchOut:
    if not response:
        raise Conflict(f"match {match_id!r} was imported and is not rated yet; a replay job rates it")
    return MatchOut.model_validate({**response, "created": False, "void": void})


async def get_match(session: AsyncSession, match_id: str) -> MatchOut:
    stored = await repository.stored(session, match_id)
    if stored is None:
        raise NotFound(f"no match {match_id!r}")
    return _out(match_id, stored.response, stored.void)


async def void_match(session: AsyncSession, match_id: str) -> MatchOut:
    response = await repository.void(session, match_id)
    if response is None:
        raise NotFound(f"no match {match_id!r}")
    return _out(match_id, response, True)
