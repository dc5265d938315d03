"""Matches: a posted match checked against its mode and read for its meaning, and the stored
results read and voided. Recording a checked match is app.matches.recording's (the one
pipeline every posted match goes through)."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.errors import AppError, Conflict, NotFound, ValidationFailed
from app.ids import EVERY_MODE, ModeScope
from app.matches import repository
from app.matches.fingerprint import match_fingerprint
from app.matches.repository import Claim
from app.matches.schemas import MatchIn, MatchOut, consistency_errors
from app.modes import service as modes
from app.modes.service import ModeRules


def body_hash(match: MatchIn) -> str:
    """The match's fingerprint (app.matches.fingerprint): tells a retry from a different match."""
    teams = [[(p.id, p.weight, p.coefficient) for p in team.players] for team in match.teams]
    return match_fingerprint(match.mode, teams, team_ranks(match))


def team_ranks(match: MatchIn) -> list[float]:
    """Each team's rank as the rating reads it: lower is better, a score counts as its negation."""
    if match.teams[0].rank is not None:
        return [float(t.rank) for t in match.teams]  # type: ignore[arg-type]
    return [-float(t.score) for t in match.teams]  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Prepared:
    """A match that passed the checks that need no ratings."""

    match: MatchIn
    rules: ModeRules
    fingerprint: str
    played_at: dt.datetime

    def claim(self) -> Claim:
        ids = [p.id for team in self.match.teams for p in team.players]
        env = self.rules.env
        return Claim(
            self.match.match_id, self.rules.name, self.played_at, self.fingerprint, ids, (env.mu, env.sigma)
        )


async def prepare_all(
    sessions: async_sessionmaker[AsyncSession], matches: Sequence[MatchIn | AppError]
) -> list[Prepared | AppError]:
    """Every match checked, with its mode's rules, in the listed order."""
    async with contextlib.AsyncExitStack() as stack:
        session: AsyncSession | None = None

        # Mode rules come from the per-process cache; a session is opened (and connects)
        # only on a miss.
        async def resolve(name: str) -> ModeRules:
            nonlocal session
            hit = modes.cached(name)
            if hit is not None:
                return hit
            if session is None:
                session = await stack.enter_async_context(sessions())
            return await modes.resolve(session, name)

        prepared: list[Prepared | AppError] = []
        for match in matches:
            try:
                if isinstance(match, AppError):
                    prepared.append(match)
                else:
                    prepared.append(_prepare(match, await resolve(match.mode)))
            except AppError as exc:
                prepared.append(exc)
    return prepared


def _prepare(match: MatchIn, rules: ModeRules) -> Prepared:
    errors = consistency_errors(match)
    if errors:
        raise ValidationFailed(
            f"{'.'.join(str(p) for p in errors[0]['loc'])}: {errors[0]['msg']}",  # type: ignore[attr-defined]
            errors=errors,
        )
    _check_coefficients(match, rules.env.team_performance)
    played_at = match.played_at or dt.datetime.now(dt.UTC)
    return Prepared(match, rules, body_hash(match), played_at)


def _check_coefficients(match: MatchIn, team_performance: str) -> None:
    """422 when the match gives coefficients and the mode does not use them."""
    if team_performance == "weighted":
        return
    given = [
        ("teams", index, "players", position, "coefficient")
        for index, team in enumerate(match.teams)
        for position, player in enumerate(team.players)
        if player.coefficient is not None
    ]
    if given:
        msg = f"coefficients need a mode with team_performance 'weighted', not {team_performance!r}"
        raise ValidationFailed(
            f"{'.'.join(map(str, given[0]))}: {msg}",
            errors=[{"loc": ["body", *loc], "msg": msg} for loc in given],
        )


def _out(match_id: str, response: dict[str, Any], void: bool) -> MatchOut:
    if not response:
        raise Conflict(f"match {match_id!r} was imported and is not rated yet; a replay job rates it")
    return MatchOut.model_validate({**response, "created": False, "void": void})


async def get_match(session: AsyncSession, match_id: str, within: ModeScope = EVERY_MODE) -> MatchOut:
    """The stored match; one of a mode outside `within` is not found, as one never posted."""
    stored = await repository.stored(session, match_id, within.like_patterns())
    if stored is None:
        raise NotFound(f"no match {match_id!r}")
    return _out(match_id, stored.response, stored.void)


async def void_match(session: AsyncSession, match_id: str, within: ModeScope = EVERY_MODE) -> MatchOut:
    """Void the match; one of a mode outside `within` is not found, as one never posted."""
    response = await repository.void(session, match_id, within.like_patterns())
    if response is None:
        raise NotFound(f"no match {match_id!r}")
    return _out(match_id, response, True)
