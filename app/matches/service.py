"""Recording match results: exactly once, a group of them in one transaction, rated by the core.

A group is what one transaction applies: one single post, the single posts a writer gathered
(app.matches.group_commit), or one batch. Each match in it stands alone: it gets the answer
the single post would get (201, 200, 404, 409 or 422), and only the rated ones are written.
Matches are rated in the listed order; a repeated match_id is judged as if posted after the
earlier one.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import metrics
from app.errors import AppError, Conflict, NotFound, ValidationFailed
from app.ids import EVERY_MODE, ModeScope
from app.matches import repository
from app.matches.fingerprint import match_fingerprint
from app.matches.repository import Claim, Claimed, MatchWrite, StoredMatch
from app.matches.schemas import MatchIn, MatchOut, MatchPlayerOut, consistency_errors, match_json, wire_json
from app.modes import service as modes
from app.modes.service import ModeRules
from app.rating import Rating, RatingInputError, conservative
from app.rating.match import MatchTeams, RatedMatch, rate_match
from app.schemas import RatingOut


def body_hash(match: MatchIn) -> str:
    """The match's fingerprint (app.matches.fingerprint): tells a retry from a different match."""
    teams = [[(p.id, p.weight, p.coefficient) for p in team.players] for team in match.teams]
    return match_fingerprint(match.mode, teams, team_ranks(match))


def team_ranks(match: MatchIn) -> list[float]:
    if match.teams[0].rank is not None:
        return [float(t.rank) for t in match.teams]  # type: ignore[arg-type]
    return [-float(t.score) for t in match.teams]  # type: ignore[arg-type]


class Recorded:
    """A match's answer: its wire form, whether this request applied it, and the result as a
    model. A fresh match's answer needs only the bytes: its model is read from them when
    asked (a retry later in the same group, a batch's item)."""

    __slots__ = ("_match", "created", "json")

    def __init__(self, json: bytes, created: bool, match: MatchOut | None = None) -> None:
        self.json = json
        self.created = created
        self._match = match

    @property
    def match(self) -> MatchOut:
        if self._match is None:
            self._match = MatchOut.model_validate_json(self.json)
        return self._match


# What one match of a group gets: its result, or the error the single post would raise.
Outcome = Recorded | AppError


def rated_match_json(match_id: str, mode: str, played_at: dt.datetime, rated: RatedMatch, k: float) -> bytes:
    """The response of a newly rated match (what POST answers and the row stores), written
    from plain data in MatchOut's field order by match_json's serialiser (schemas.wire_json):
    no model per rating, nor one for the match."""
    return wire_json(
        {
            "match_id": match_id,
            "mode": mode,
            "played_at": played_at,
            "created": True,
            "quality": rated.quality,
            "void": False,
            "players": [
                {
                    "player_id": p.player_id,
                    "team": p.team,
                    "before": _rating_fields(p.before.mu, p.before.sigma, k),
                    "after": _rating_fields(p.after.mu, p.after.sigma, k),
                }
                for p in rated.players
            ],
        }
    )


def _rating_fields(mu: float, sigma: float, k: float) -> dict[str, float]:
    return {"mu": mu, "sigma": sigma, "conservative": conservative(mu, sigma, k)}


def _rating(mu: float, sigma: float, k: float) -> RatingOut:
    return RatingOut(mu=mu, sigma=sigma, conservative=conservative(mu, sigma, k))


def response_json(
    match_id: str,
    mode: str,
    played_at: str,
    quality: float,
    players: list[tuple[str, int, float, float, float, float]],
    k: float,
) -> str:
    """The stored response of a rated match, for writers that hold plain tuples (replay).
    `players` holds (player_id, team, mu before, sigma before, mu after, sigma after)."""
    out = MatchOut(
        match_id=match_id,
        mode=mode,
        played_at=dt.datetime.fromisoformat(played_at),
        created=True,
        quality=quality,
        void=False,
        players=[
            MatchPlayerOut(player_id=p, team=t, before=_rating(mb, sb, k), after=_rating(ma, sa, k))
            for p, t, mb, sb, ma, sa in players
        ],
    )
    return match_json(out).decode()


@dataclass(frozen=True, slots=True)
class Prepared:
    """A match that passed the checks that need no ratings."""

    match: MatchIn
    rules: ModeRules
    coefficients: list[list[float]] | None
    fingerprint: str
    played_at: dt.datetime
    ranks: list[float]

    def claim(self) -> Claim:
        ids = [p.id for team in self.match.teams for p in team.players]
        env = self.rules.env
        return Claim(
            self.match.match_id, self.rules.name, self.played_at, self.fingerprint, ids, (env.mu, env.sigma)
        )


@dataclass(frozen=True, slots=True)
class Reference:
    """What a later post of a match id is compared with: the stored match, or the one an
    earlier item of the same group recorded."""

    body_hash: str
    played_at: dt.datetime
    # None: imported and not rated yet. One recorded earlier in the group is its Recorded
    # (read into a model, with `created` false, only when a retry in the group needs it).
    match: MatchOut | Recorded | None

    @staticmethod
    def of(stored: StoredMatch) -> Reference:
        match = None
        if stored.response:
            match = MatchOut.model_validate({**stored.response, "created": False, "void": stored.void})
        return Reference(stored.body_hash, stored.played_at, match)


@dataclass(slots=True)
class _Group:
    """The writes of a rated group, gathered in application order."""

    state: dict[tuple[str, str], Rating]
    ratings: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    participants: list[dict[str, Any]] = field(default_factory=list)
    matches: list[MatchWrite] = field(default_factory=list)
    counts: list[tuple[str, int]] = field(default_factory=list)


ModeLookup = Callable[[str], Awaitable[ModeRules]]


async def prepare(resolve: ModeLookup, match: MatchIn) -> Prepared:
    errors = consistency_errors(match)
    if errors:
        raise ValidationFailed(
            f"{'.'.join(str(p) for p in errors[0]['loc'])}: {errors[0]['msg']}",  # type: ignore[attr-defined]
            errors=errors,
        )
    rules = await resolve(match.mode)
    coefficients = _coefficients(match, rules.env.team_performance)
    played_at = match.played_at or dt.datetime.now(dt.UTC)
    return Prepared(match, rules, coefficients, body_hash(match), played_at, team_ranks(match))


def retry(reference: Reference, prepared: Prepared) -> Recorded:
    """The stored answer when `prepared` is a retry: the same meaning (fingerprint) and, when
    it gives one, the same played_at instant (the stored one may be the server's stamp)."""
    match_id = prepared.match.match_id
    if reference.body_hash != prepared.fingerprint:
        raise Conflict(f"match {match_id!r} was already recorded with a different body")
    given = prepared.match.played_at
    if given is not None and given != reference.played_at:
        raise Conflict(
            f"match {match_id!r} was already recorded with played_at "
            f"{reference.played_at.isoformat().replace('+00:00', 'Z')}"
        )
    if reference.match is None:
        raise Conflict(f"match {match_id!r} was imported and is not rated yet; a replay job rates it")
    match = reference.match
    if isinstance(match, Recorded):  # recorded earlier in the group: the stored answer says false
        match = match.match.model_copy(update={"created": False})
    elif match.created:
        match = match.model_copy(update={"created": False})
    return Recorded(match_json(match), created=False, match=match)


def stored_reference(claimed: Claimed, match_id: str) -> Reference:
    """What a post of `match_id`, an id taken before this transaction's claim, is compared with."""
    stored = claimed.taken.get(match_id)
    if stored is None:  # pragma: no cover - the claim saw it, and matches are never deleted
        raise Conflict(f"match {match_id!r} is being recorded; retry")
    return Reference.of(stored)


def refusal(reason: str) -> ValidationFailed:
    """The 422 of a match the engine refuses (a tie in a mode without draws)."""
    return ValidationFailed(reason, errors=[{"loc": ["body", "teams"], "msg": reason}])


def _rate(group: _Group, prepared: Prepared, pk: int, seq: int) -> Recorded:
    """Rate a newly claimed match on the group's current ratings and gather its writes."""
    match, rules = prepared.match, prepared.rules
    mode = rules.name
    teams = MatchTeams(
        ids=[[p.id for p in team.players] for team in match.teams],
        ratings=[[group.state[mode, p.id] for p in team.players] for team in match.teams],
        ranks=prepared.ranks,
        weights=[[p.weight for p in team.players] for team in match.teams],
        coefficients=prepared.coefficients,
    )
    try:
        rated = rate_match(rules.env, teams)
    except RatingInputError as exc:
        raise refusal(str(exc)) from None
    stored = rated_match_json(match.match_id, match.mode, prepared.played_at, rated, rules.conservative_k)
    given = [p for team in match.teams for p in team.players]
    for r, player in zip(rated.players, given, strict=True):
        group.state[mode, r.player_id] = r.after
        total = group.ratings.get((mode, r.player_id))
        if total is None:
            total = group.ratings[mode, r.player_id] = {
                "mode": mode,
                "player_id": r.player_id,
                "matches": 0,
                "win": 0,
                "loss": 0,
                "draw": 0,
                "played_at": prepared.played_at,
            }
        total["mu"], total["sigma"] = r.after.mu, r.after.sigma
        total["matches"] += 1
        total["win"] += r.win
        total["loss"] += r.loss
        total["draw"] += r.draw
        total["played_at"] = max(total["played_at"], prepared.played_at)
        group.participants.append(
            {
                "match_pk": pk,
                "player_id": r.player_id,
                "mode": mode,
                "team": r.team,
                "rank": r.rank,
                "weight": player.weight,
                "coefficient": player.coefficient,
                "mu_before": r.before.mu,
                "sigma_before": r.before.sigma,
                "mu_after": r.after.mu,
                "sigma_after": r.after.sigma,
            }
        )
    group.matches.append(MatchWrite(prepared.claim(), pk, rated.quality, stored.decode(), seq))
    group.counts.append((mode, len(rated.players)))
    return Recorded(stored, created=True)


def _outcomes(
    prepared: Sequence[Prepared | AppError], claimed: Claimed, excluded: dict[int, AppError]
) -> tuple[list[Outcome], _Group, dict[int, AppError]]:
    """Every match's outcome in the listed order, on the claimed rows; the errors of newly
    claimed matches the engine refused (their claims must be undone)."""
    group = _Group(state={key: Rating(mu, sigma) for key, (mu, sigma) in claimed.ratings.items()})
    references: dict[str, Reference] = {}
    refused: dict[int, AppError] = {}
    refused_ids: set[str] = set()
    sequence = iter(claimed.sequence)
    outcomes: list[Outcome] = []
    for index, item in enumerate(prepared):
        if isinstance(item, AppError):
            outcomes.append(item)
            continue
        if index in excluded:
            outcomes.append(excluded[index])
            continue
        match_id = item.match.match_id
        if match_id in refused_ids:  # this round is claimed again; its answers are dropped
            outcomes.append(excluded.get(index) or Conflict(f"match {match_id!r} is claimed again"))
            continue
        try:
            reference = references.get(match_id)
            if reference is not None:
                outcomes.append(retry(reference, item))
            elif match_id in claimed.new:
                recorded = _rate(group, item, claimed.new[match_id], next(sequence))
                references[match_id] = Reference(item.fingerprint, item.played_at, recorded)
                outcomes.append(recorded)
            else:
                references[match_id] = stored_reference(claimed, match_id)
                outcomes.append(retry(references[match_id], item))
        except AppError as exc:
            if match_id in claimed.new and match_id not in references:
                refused[index] = exc
                refused_ids.add(match_id)
            outcomes.append(exc)
    return outcomes, group, refused


async def _apply(
    conn: AsyncConnection[Any],
    prepared: Sequence[Prepared | AppError],
    setup: Sequence[str] = (),
    commit: bool = False,
) -> tuple[list[Outcome], _Group]:
    """Claim, rate and write a group in the caller's transaction. A match the engine refuses
    after its id was claimed undoes the claims and the group is claimed again without it
    (rare: a tie in a mode without draws), so nothing of it is written and a later post of
    its id in the group is judged as the first; so does a write that another transaction
    beat to one of its ids (`repository.Raced`): claimed again, the id reads as taken.
    `setup` and `commit` are for a caller that begins and commits the transaction here
    (record_and_commit)."""
    excluded: dict[int, AppError] = {}
    while True:
        claims: dict[str, Claim] = {}
        for index, item in enumerate(prepared):
            if isinstance(item, Prepared) and index not in excluded:
                claims.setdefault(item.match.match_id, item.claim())
        claimed = await repository.claim(conn, list(claims.values()), setup)
        setup = ()  # the transaction is open now
        outcomes, group, refused = _outcomes(prepared, claimed, excluded)
        if refused:
            excluded.update(refused)
            await repository.rollback_claims(conn)
            continue
        if not group.matches:
            if commit:
                await conn.commit()
            return outcomes, group
        try:
            await repository.write(
                conn, list(group.ratings.values()), group.participants, group.matches, commit=commit
            )
        except repository.Raced:
            await repository.rollback_claims(conn)
            continue
        return outcomes, group


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
                prepared.append(match if isinstance(match, AppError) else await prepare(resolve, match))
            except AppError as exc:
                prepared.append(exc)
    return prepared


async def record_and_commit(
    conn: AsyncConnection[Any],
    sessions: async_sessionmaker[AsyncSession],
    matches: Sequence[MatchIn | AppError],
    setup: Sequence[str],
) -> list[Outcome]:
    """Record `matches` in one transaction, in the listed order: each one's outcome. Metrics
    count after commit. `conn` is a connection of the caller's with no transaction open: the
    transaction begins with `setup` (its settings) in the claim's round trip and commits in
    the write's, two round trips in all. On an error the caller rolls back (or drops `conn`)."""
    prepared = await prepare_all(sessions, matches)
    if not any(isinstance(item, Prepared) for item in prepared):
        return [item for item in prepared if isinstance(item, AppError)]
    outcomes, group = await _apply(conn, prepared, setup, commit=True)
    for mode, ratings in group.counts:
        _count(mode, ratings)
    return outcomes


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
