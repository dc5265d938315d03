"""Lobby use cases: how fair is this lobby, and what is its fairest split."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import ValidationFailed
from app.lobbies.schemas import BalanceIn, BalanceOut, EvaluateIn, EvaluateOut
from app.matchmaking.balance import balance
from app.matchmaking.roles import Composition
from app.modes import service as modes
from app.players import repository as players
from app.rating import Rating, RatingInputError


async def _ratings(session: AsyncSession, mode: str, ids: list[str]) -> tuple[list[Rating], modes.ModeRules]:
    """The players' current ratings in `ids` order (the mode's prior for players it has
    not seen), and the mode's rules."""
    rules = await modes.resolve(session, mode)
    prior = Rating(rules.env.mu, rules.env.sigma)
    rows = await players.current_ratings(session, mode, ids)
    return [Rating(*rows[p]) if p in rows else prior for p in ids], rules


def _unique(ids: list[str], where: str) -> None:
    seen: set[str] = set()
    for index, player in enumerate(ids):
        if player in seen:
            raise ValidationFailed(
                f"player {player!r} appears twice",
                errors=[{"loc": ["body", where, index], "msg": f"player {player!r} appears twice"}],
            )
        seen.add(player)


async def evaluate(session: AsyncSession, body: EvaluateIn) -> EvaluateOut:
    ids = [p for team in body.teams for p in team]
    _unique(ids, "teams")
    ratings, rules = await _ratings(session, body.mode, ids)
    flat = iter(ratings)
    groups = [[next(flat) for _ in team] for team in body.teams]
    try:
        return EvaluateOut(
            quality=rules.env.quality(groups), win_probabilities=rules.env.win_probability(groups)
        )
    except RatingInputError as exc:
        raise ValidationFailed(str(exc), errors=[{"loc": ["body", "teams"], "msg": str(exc)}]) from None


async def balance_lobby(session: AsyncSession, body: BalanceIn) -> BalanceOut:
    _unique(body.players, "players")
    index = {p: i for i, p in enumerate(body.players)}
    for number, party in enumerate(body.parties):
        for player in party:
            if player not in index:
                message = f"party member {player!r} is not in players"
                raise ValidationFailed(message, errors=[{"loc": ["body", "parties", number], "msg": message}])
    ratings, rules = await _ratings(session, body.mode, body.players)
    composition = rules.shape.composition
    roles = _roles(body, composition)
    try:
        split = balance(
            ratings,
            body.teams,
            [[index[p] for p in party] for party in body.parties],
            rules.env,
            roles=roles,
            composition=composition,
        )
    except RatingInputError as exc:
        raise ValidationFailed(str(exc), errors=[{"loc": ["body"], "msg": str(exc)}]) from None
    named = None
    if composition is not None and split.roles is not None:
        named = {
            body.players[p]: composition.roles[role]
            for team, team_roles in zip(split.teams, split.roles, strict=True)
            for p, role in zip(team, team_roles, strict=True)
        }
    return BalanceOut(
        teams=[[body.players[i] for i in team] for team in split.teams],
        quality=split.quality,
        exact=split.exact,
        roles=named,
    )


def _roles(body: BalanceIn, composition: Composition | None) -> list[list[str]] | None:
    """Each player's roles in `players` order, checked as a ticket's are (422 naming the field)."""

    def refuse(message: str, *where: str) -> None:
        raise ValidationFailed(message, errors=[{"loc": ["body", "roles", *where], "msg": message}])

    if composition is None:
        if body.roles is not None:
            refuse(f"mode {body.mode!r} has no roles")
        return None
    listed = body.roles or {}
    for player in listed:
        if player not in body.players:
            refuse(f"{player!r} is not in players", player)
    known = ", ".join(composition.roles)
    for player in body.players:
        if player not in listed:
            refuse(f"player {player!r} lists no role (the mode's roles: {known})")
        for name in listed[player]:
            if name not in composition.roles:
                refuse(f"unknown role {name!r} (the mode's roles: {known})", player)
    return [listed[p] for p in body.players]
