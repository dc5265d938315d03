"""Recording matches: the one pipeline every posted match goes through, exactly once.

A group is what one transaction records: one single post, the single posts a writer gathered
(app.matches.group_commit), or one batch (POST /v1/matches/batch). Each match in it stands
alone: it gets the answer the single post would get (201, 200, 404, 409 or 422), and only the
rated ones are written. Matches are rated in the listed order; a repeated match_id is judged
as if posted after the earlier one.

The pipeline owns its transaction, on a connection of the writers' own (app.db.connections):

1. every match checked and its mode's rules found (`service.prepare_all`), before taking a
   connection;
2. the claim (`repository.claim`, one round trip that begins the transaction): the stored rows
   of the ids already taken, the missing ratings created, every participant's rating locked in
   one fixed order, the applied_seq values drawn;
3. the new matches rated in order, level by level (app.matches.columns, app.rating.levels);
4. their responses built (app.matches.responses) and written with everything else in one
   statement, the COMMIT in the same round trip (`repository.write`).

A match the engine refuses (a tie in a mode without draws) goes back to the claim's savepoint
and the group is claimed again without it, so nothing of it is written and a later post of its
id in the group is judged as the first; so does a write that another transaction beat to one
of its ids (`repository.Raced`): claimed again, the id reads as taken.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import AsyncConnection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from app import metrics
from app.config import Settings
from app.db.connections import Connections
from app.errors import AppError, Conflict, ValidationFailed
from app.matches import columns, repository
from app.matches.repository import Claim, Claimed, StoredMatch
from app.matches.responses import response_data
from app.matches.schemas import MatchIn, MatchOut, match_json, wire_json
from app.matches.service import Prepared, prepare_all


class Recorded:
    """A match's answer: the match (`data`: plain data when this request applied it, else the
    model), whether this request applied it, and its wire form (`json`), what a single post
    answers. The model of an applied match is read from its bytes only when asked (a retry
    later in the same group)."""

    __slots__ = ("_match", "created", "data", "json")

    def __init__(self, data: dict[str, Any] | MatchOut, json: bytes, created: bool) -> None:
        self.data = data
        self.json = json
        self.created = created
        self._match = data if isinstance(data, MatchOut) else None

    @property
    def match(self) -> MatchOut:
        if self._match is None:
            self._match = MatchOut.model_validate_json(self.json)
        return self._match


# What one match of a group gets: its result, or the error the single post would raise.
Outcome = Recorded | AppError


@dataclass(frozen=True, slots=True)
class Reference:
    """What a later post of a match id is compared with: the stored match, or the one an
    earlier item of the same group applied."""

    body_hash: str
    played_at: dt.datetime
    match: MatchOut | None  # None: imported and not rated yet

    @staticmethod
    def of(stored: StoredMatch) -> Reference:
        match = None
        if stored.response:
            match = MatchOut.model_validate({**stored.response, "created": False, "void": stored.void})
        return Reference(stored.body_hash, stored.played_at, match)


class Writers:
    """Where groups are recorded: at most `size` groups in their transactions at once, each
    on a connection of the writers' own (app.db.connections). The group commit of single
    posts has its writers, the batch route its own."""

    def __init__(
        self, engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession], settings: Settings, size: int
    ) -> None:
        self._connections = Connections(engine, settings, size)
        self._sessions = sessions

    async def record(self, matches: Sequence[MatchIn | AppError]) -> list[Outcome]:
        """Record `matches` in one transaction, in the listed order: each one's outcome. Errors
        of the database propagate (nothing of the group is then applied); metrics count after
        commit. Waits for a writer's turn once the matches are checked."""
        prepared = await prepare_all(self._sessions, matches)
        if not any(isinstance(item, Prepared) for item in prepared):
            return [item for item in prepared if isinstance(item, AppError)]
        async with self._connections.connection() as conn:
            outcomes, counts = await _apply(conn, self._connections.begin, prepared)
        for mode, (rated, ratings) in counts.items():
            metrics.MATCHES_RATED.labels(mode).inc(rated)
            metrics.RATINGS_WRITTEN.labels(mode, "match").inc(ratings)
        return outcomes

    async def close(self) -> None:
        """Close the connections (at shutdown, once no group is in flight)."""
        await self._connections.close()


async def _apply(
    conn: AsyncConnection[Any], begin: Sequence[str], prepared: Sequence[Prepared | AppError]
) -> tuple[list[Outcome], dict[str, tuple[int, int]]]:
    """Claim, rate and write the group in a transaction that `begin` opens in the claim's round
    trip and that commits in the write's: the outcomes, and per mode the matches rated and
    ratings written."""
    excluded: dict[int, AppError] = {}
    while True:
        claims: dict[str, Claim] = {}
        for index, item in enumerate(prepared):
            if isinstance(item, Prepared) and index not in excluded:
                claims.setdefault(item.match.match_id, item.claim())
        claimed = await repository.claim(conn, list(claims.values()), begin)
        begin = ()  # the transaction is open now
        fresh = _fresh(prepared, claimed, excluded)
        items = [item for _, item in fresh]
        if not items:  # retries and refusals only: nothing to write
            await conn.commit()
            applied: list[Recorded] = []
            break
        rated = columns.rate(
            [item.rules for item in items],
            [item.match for item in items],
            [item.played_at for item in items],
            claimed,
        )
        if rated.refused:
            excluded.update({fresh[at][0]: refusal(reason) for at, reason in rated.refused.items()})
            await repository.rollback_claims(conn)
            continue
        applied = _responses(items, rated)
        try:
            await repository.write(conn, _write(items, rated, claimed, applied))
        except repository.Raced:
            # Another transaction recorded one of the ids since the claim: claimed again, it
            # reads as taken and its items are answered as retries.
            await repository.rollback_claims(conn)
            continue
        break
    counts: dict[str, tuple[int, int]] = {}
    for item in items:
        done, ratings = counts.get(item.rules.name, (0, 0))
        counts[item.rules.name] = (done + 1, ratings + sum(len(team.players) for team in item.match.teams))
    first = {item.match.match_id: (item, done) for (_, item), done in zip(fresh, applied, strict=True)}
    by_index = {index: done for (index, _), done in zip(fresh, applied, strict=True)}
    return _outcomes(prepared, claimed, excluded, by_index, first), counts


def _fresh(
    prepared: Sequence[Prepared | AppError], claimed: Claimed, excluded: dict[int, AppError]
) -> list[tuple[int, Prepared]]:
    """The items this group applies, with their positions: the first (not excluded) item of
    each newly claimed id."""
    seen: set[str] = set()
    fresh = []
    for index, item in enumerate(prepared):
        if isinstance(item, Prepared) and index not in excluded:
            match_id = item.match.match_id
            if match_id in claimed.new and match_id not in seen:
                fresh.append((index, item))
            seen.add(match_id)
    return fresh


def _responses(items: list[Prepared], rated: columns.Rated) -> list[Recorded]:
    """Each fresh match's answer: its response (app.matches.responses), serialised once."""
    entries = columns.entries(
        [item.rules for item in items],
        [item.match for item in items],
        [item.played_at for item in items],
        rated,
    )
    return [Recorded(data, wire_json(data), created=True) for data in response_data(entries)]


def _write(
    items: list[Prepared], rated: columns.Rated, claimed: Claimed, applied: list[Recorded]
) -> repository.Write:
    return columns.write(
        [item.match for item in items],
        [item.played_at for item in items],
        [item.fingerprint for item in items],
        [claimed.new[item.match.match_id] for item in items],
        # applied_seq in the listed order: drawn under the locks, in increasing order.
        claimed.sequence[: len(items)],
        rated,
        (b"[" + b",".join(recorded.json for recorded in applied) + b"]").decode(),
    )


def _outcomes(
    prepared: Sequence[Prepared | AppError],
    claimed: Claimed,
    excluded: dict[int, AppError],
    applied: dict[int, Recorded],
    first: dict[str, tuple[Prepared, Recorded]],
) -> list[Outcome]:
    """Every item's outcome in the listed order: an applied match's response, or what a later
    post of its id (or of a stored one) gets (`first`: the applied items by id)."""
    references: dict[str, Reference] = {}
    outcomes: list[Outcome] = []
    for index, item in enumerate(prepared):
        if isinstance(item, AppError):
            outcomes.append(item)
        elif index in excluded:
            outcomes.append(excluded[index])
        elif index in applied:
            outcomes.append(applied[index])
        else:
            match_id = item.match.match_id
            try:
                reference = references.get(match_id)
                if reference is None:
                    reference = references[match_id] = _reference(claimed, first, match_id)
                outcomes.append(retry(reference, item))
            except AppError as exc:
                outcomes.append(exc)
    return outcomes


def _reference(claimed: Claimed, first: dict[str, tuple[Prepared, Recorded]], match_id: str) -> Reference:
    """What a later post of `match_id` is compared with: the group's own match, or the stored one."""
    if match_id in first:
        item, recorded = first[match_id]
        return Reference(
            item.fingerprint, item.played_at, recorded.match.model_copy(update={"created": False})
        )
    stored = claimed.taken.get(match_id)
    if stored is None:  # pragma: no cover - the claim saw it, and matches are never deleted
        raise Conflict(f"match {match_id!r} is being recorded; retry")
    return Reference.of(stored)


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
    return Recorded(reference.match, match_json(reference.match), created=False)


def refusal(reason: str) -> ValidationFailed:
    """The 422 of a match the engine refuses (a tie in a mode without draws)."""
    return ValidationFailed(reason, errors=[{"loc": ["body", "teams"], "msg": reason}])
