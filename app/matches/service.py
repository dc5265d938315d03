"""Recording a match result: exactly once, in one transaction, rated by the core."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app import metrics
from app.db.commit_hooks import after_commit
from app.errors import Conflict, NotFound, ValidationFailed
from app.matches import repository
from app.matches.fingerprint import match_fingerprint
from app.matches.repository import Outcome, Prior
from app.matches.schemas import MatchIn, MatchOut, consistency_errors
from app.modes import service as modes
from app.rating import Rating, RatingInputError, conservative
from app.rating.match import MatchTeams, rate_match


def body_hash(match: MatchIn) -> str:
    """The match's fingerprint (app.matches.fingerprint): tells a retry from a different match."""
    teams = [[(p.id, p.weight, p.coefficient) for p in team.players] for team in match.teams]
    return match_fingerprint(match.mode, teams, team_ranks(match))


def team_ranks(match: MatchIn) -> list[float]:
    if match.teams[0].rank is not None:
        return [float(t.rank) for t in match.teams]  # type: ignore[arg-type]
    return [-float(t.score) for t in match.teams]  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Recorded:
    """The response to a posted match, already serialised (it is also what is stored)."""

    json: bytes
    created: bool


async def record_match(session: AsyncSession, match: MatchIn) -> Recorded:
    errors = consistency_errors(match)
    if errors:
        raise ValidationFailed(
            f"{'.'.join(str(p) for p in errors[0]['loc'])}: {errors[0]['msg']}",  # type: ignore[attr-defined]
            errors=errors,
        )
    rules = await modes.resolve(session, match.mode)
    coefficients = _coefficients(match, rules.env.team_performance)
    fingerprint = body_hash(match)
    played_at = match.played_at or dt.datetime.now(dt.UTC)
    env, k = rules.env, rules.conservative_k
    ids = [p.id for team in match.teams for p in team.players]
    prior = Prior(env.mu, env.sigma)
    claimed = await repository.claim(session, match.match_id, rules.name, played_at, fingerprint, ids, prior)
    if claimed is None:
        return Recorded(await _replayed(session, match, fingerprint), created=False)

    match_pk, current = claimed
    teams = MatchTeams(
        ids=[[p.id for p in team.players] for team in match.teams],
        ratings=[[Rating(*current[p.id]) for p in team.players] for team in match.teams],
        ranks=team_ranks(match),
        weights=[[p.weight for p in team.players] for team in match.teams],
        coefficients=coefficients,
    )
    try:
        rated = rate_match(env, teams)
    except RatingInputError as exc:
        raise ValidationFailed(str(exc), errors=[{"loc": ["body", "teams"], "msg": str(exc)}]) from None
    quality = rated.quality

    given = [p for team in match.teams for p in team.players]
    outcomes = [
        Outcome(
            r.player_id,
            r.team,
            r.rank,
            player.weight,
            player.coefficient,
            r.before.mu,
            r.before.sigma,
            r.after.mu,
            r.after.sigma,
            r.win,
            r.loss,
            r.draw,
        )
        for r, player in zip(rated.players, given, strict=True)
    ]
    stored = response_json(
        match.match_id,
        match.mode,
        played_at.isoformat().replace("+00:00", "Z"),
        quality,
        [(o.player_id, o.team, o.mu_before, o.sigma_before, o.mu, o.sigma) for o in outcomes],
        k,
    )
    await repository.apply(session, match_pk, rules.name, played_at, outcomes, quality, stored)
    after_commit(session, lambda: _count(rules.name, len(outcomes)))
    return Recorded(stored.encode(), created=True)


def _count(mode: str, ratings: int) -> None:
    metrics.MATCHES_RATED.labels(mode).inc()
    metrics.RATINGS_WRITTEN.labels(mode, "match").inc(ratings)


def _coefficients(match: MatchIn, team_performance: str) -> list[list[float]] | None:
    """The team-performance coefficients to rate with; 422 when the mode does not use them."""
    given = [
        ("teams", index, "players", position, "coefficient")
        for index, team in enumerate(match.teams)
        for position, player in enumerate(team.players)
        if player.coefficient is not None
    ]
    if team_performance != "weighted":
        if given:
            msg = f"coefficients need a mode with team_performance 'weighted', not {team_performance!r}"
            raise ValidationFailed(
                f"{'.'.join(map(str, given[0]))}: {msg}",
                errors=[{"loc": ["body", *loc], "msg": msg} for loc in given],
            )
        return None
    return [[1.0 if p.coefficient is None else p.coefficient for p in team.players] for team in match.teams]


def response_json(
    match_id: str,
    mode: str,
    played_at: str,
    quality: float,
    players: list[tuple[str, int, float, float, float, float]],
    k: float,
) -> str:
    """The stored response of a rated match: what POST answers, and what a retry gets back.
    `players` holds (player_id, team, mu before, sigma before, mu after, sigma after)."""
    response = {
        "match_id": match_id,
        "mode": mode,
        "played_at": played_at,
        "created": True,
        "quality": quality,
        "void": False,
        "players": [
            {
                "player_id": player,
                "team": team,
                "before": rating_json(mu_before, sigma_before, k),
                "after": rating_json(mu_after, sigma_after, k),
            }
            for player, team, mu_before, sigma_before, mu_after, sigma_after in players
        ],
    }
    return _dumps(response)


def _dumps(response: dict[str, Any]) -> str:
    # Compact, in MatchOut's field order: a retry's 200 has the 201's bytes but for "created".
    return json.dumps(response, separators=(",", ":"))


def rating_json(mu: float, sigma: float, k: float) -> dict[str, float]:
    return {"mu": mu, "sigma": sigma, "conservative": conservative(mu, sigma, k)}


def replayed_json(response: dict[str, Any], void: bool) -> bytes:
    """A stored response as a retry gets it: the 201's layout (JSONB reorders keys; floats
    come back as the same doubles, so they print as before), created false."""

    def rating(stored: dict[str, float]) -> dict[str, float]:
        return {"mu": stored["mu"], "sigma": stored["sigma"], "conservative": stored["conservative"]}

    ordered = {
        "match_id": response["match_id"],
        "mode": response["mode"],
        "played_at": response["played_at"],
        "created": False,
        "quality": response["quality"],
        "void": void,
        "players": [
            {
                "player_id": p["player_id"],
                "team": p["team"],
                "before": rating(p["before"]),
                "after": rating(p["after"]),
            }
            for p in response["players"]
        ],
    }
    return _dumps(ordered).encode()


async def _replayed(session: AsyncSession, match: MatchIn, fingerprint: str) -> bytes:
    """The stored answer when `match` is a retry: the same meaning (fingerprint) and, when it
    gives one, the same played_at instant (the stored one may be the server's stamp)."""
    stored = await repository.stored(session, match.match_id)
    if stored is None:  # pragma: no cover - the claim saw it, and matches are never deleted
        raise Conflict(f"match {match.match_id!r} is being recorded; retry")
    if stored.body_hash != fingerprint:
        raise Conflict(f"match {match.match_id!r} was already recorded with a different body")
    if match.played_at is not None and match.played_at != stored.played_at:
        raise Conflict(
            f"match {match.match_id!r} was already recorded with played_at "
            f"{stored.played_at.isoformat().replace('+00:00', 'Z')}"
        )
    _require_rated(match.match_id, stored.response)
    return replayed_json(stored.response, stored.void)


def _require_rated(match_id: str, response: dict[str, Any]) -> None:
    if not response:
        raise Conflict(f"match {match_id!r} was imported and is not rated yet; a replay job rates it")


def _out(match_id: str, response: dict[str, Any], void: bool) -> MatchOut:
    _require_rated(match_id, response)
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
