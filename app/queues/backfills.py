"""Backfill use cases: a running game's open slots filled from the queue (docs/api.md).

A matchmaking call serves the mode's backfills first, oldest first (serve), then forms new
matches from the tickets left. A fill is a proposal of kind "backfill" whose tickets are
claimed against the backfill's version (backfill_store.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable, Sequence

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession

from app.errors import Conflict, NotFound, ValidationFailed
from app.ids import PSEUDONYM_PREFIX, is_pseudonym
from app.infra.redis_client import RedisClient
from app.matchmaking.backfill import Fill, Opening, fill_backfills
from app.matchmaking.pool import attribute_group
from app.matchmaking.proposals import canonical_attributes
from app.modes import service as modes
from app.modes.service import ModeRules
from app.players import repository as players
from app.queues.backfill_store import (
    BackfillStore,
    PendingFill,
    Ratings,
    Record,
    Refused,
    players_of,
    ratings_of,
)
from app.queues.proposals import Filling, ProposalWriter
from app.queues.schemas import (
    BackfillIn,
    BackfillOut,
    BackfillUpdate,
    ProposalOut,
    ProposalState,
    to_json,
)
from app.queues.store import ProposalClaim, Waiting, new_ids
from app.queues.watch import TicketWatch


@dataclasses.dataclass(frozen=True, slots=True)
class Roster:
    """A backfill as it stands: its record with settled fills folded in (accepted ones join the
    roster, failed ones go), the players of pending ones, and per team its ratings."""

    record: Record  # folded (same version as read)
    teams: list[list[str]]  # pending fills' players included
    ratings: Ratings
    pending: list[str]


def standing(record: Record, states: dict[str, str]) -> Roster:
    if not record.fills:
        # No fill pending or settling: the record is the roster as it stands (nothing to copy,
        # as none of it changes; a matchmaking call stands every backfill).
        return Roster(record, record.teams, record.ratings, [])
    teams = [list(team) for team in record.teams]
    ratings = [list(team) for team in record.ratings]
    kept: list[PendingFill] = []
    for fill in record.fills:
        state = states.get(fill.proposal_id, "failed")
        if state == "failed":
            continue
        if state == "pending":
            kept.append(fill)
        else:
            for team, (names, rated) in enumerate(zip(fill.teams, fill.ratings, strict=True)):
                teams[team] += names
                ratings[team] += rated
    folded = record.with_roster(record.version, [list(t) for t in teams], [list(r) for r in ratings], kept)
    pending = [name for fill in kept for team in fill.teams for name in team]
    for fill in kept:
        for team, (names, rated) in enumerate(zip(fill.teams, fill.ratings, strict=True)):
            teams[team] += names
            ratings[team] += rated
    return Roster(folded, teams, ratings, pending)


async def _standing(store: BackfillStore, records: Sequence[Record]) -> list[Roster]:
    ids = [fill.proposal_id for record in records for fill in record.fills]
    states = await store.proposal_states(ids) if ids else {}
    return [standing(record, states) for record in records]


def _view(roster: Roster, team_size: int) -> BackfillOut:
    record = roster.record
    return BackfillOut(
        backfill_id=record.backfill_id,
        version=record.version,
        teams=roster.teams,
        pending=roster.pending,
        open_slots=[max(0, team_size - len(team)) for team in roster.teams],
        attributes=json.loads(record.attributes),
        region=record.region,
        created_at=dt.datetime.fromtimestamp(record.created_at, dt.UTC),
        expires_at=dt.datetime.fromtimestamp(record.expires_at, dt.UTC),
        fill_ids=[fill.proposal_id for fill in record.fills],
    )


def _refuse(message: str, *where: str | int) -> ValidationFailed:
    return ValidationFailed(message, errors=[{"loc": ["body", *where], "msg": message}])


def _check_roster(teams: list[list[str]], rules: ModeRules) -> None:
    """422 naming the field for a roster the mode cannot play."""
    shape = rules.shape
    if shape.composition is not None:
        raise _refuse("backfills do not serve modes with roles", "teams")
    if len(teams) != shape.teams:
        raise _refuse(f"the roster has {len(teams)} teams; the mode plays {shape.teams}", "teams")
    seen: set[str] = set()
    for number, team in enumerate(teams):
        if len(team) > shape.team_size:
            raise _refuse(
                f"team {number} has {len(team)} players; the mode's teams hold {shape.team_size}",
                "teams",
                number,
            )
        for player in team:
            if player in seen:
                raise _refuse(f"player {player!r} appears twice in the roster", "teams", number)
            seen.add(player)
    if not seen:
        raise _refuse("the roster is empty: a backfill fills a game that has players", "teams")


async def _ratings(session: AsyncSession, mode: str, rules: ModeRules, teams: list[list[str]]) -> Ratings:
    """The roster's ratings, read as a ticket's are (unseen players at the mode's prior)."""
    known = await players.current_ratings(session, mode, [p for team in teams for p in team])
    prior = (rules.env.mu, rules.env.sigma)
    return [[list(known.get(p, prior)) for p in team] for team in teams]


def _raise_refused(refused: Refused, mode: str, backfill_id: str) -> None:
    code, details = refused.code, refused.details
    if code == "unknown":
        raise NotFound(f"no backfill {backfill_id!r} in {mode!r}")
    if code == "stale":
        raise Conflict(f"backfill {backfill_id!r} is at version {details[0]}: read it again")
    if code == "rostered":
        raise Conflict(f"player {details[0]!r} is on the roster of backfill {details[1]!r} in {mode!r}")
    raise Conflict(f"player {details[0]!r} holds an active ticket in {mode!r}")


async def create_backfill(
    session: AsyncSession, redis: RedisClient, mode: str, body: BackfillIn
) -> BackfillOut:
    rules = await modes.resolve(session, mode)
    _check_roster(body.teams, rules)
    region = body.region
    if region is None and body.latencies:
        region = min(body.latencies.items(), key=lambda item: (item[1], item[0]))[0]
    now = time.time()
    (backfill_id,) = new_ids(1, now)
    record = Record(
        backfill_id,
        1,
        body.teams,
        await _ratings(session, mode, rules, body.teams),
        canonical_attributes(body.attributes) if body.attributes else "{}",
        region,
        now,
        now + body.ttl_s,
    )
    store = BackfillStore(redis, mode)
    try:
        await store.put(backfill_id, now, "new", record)
    except Refused as refused:
        _raise_refused(refused, mode, backfill_id)
    return _view(standing(record, {}), rules.shape.team_size)


async def _read(store: BackfillStore, mode: str, backfill_id: str) -> Roster:
    record = await store.get(backfill_id, time.time())
    if record is None:
        raise NotFound(f"no backfill {backfill_id!r} in {mode!r}")
    (roster,) = await _standing(store, [record])
    return roster


async def get_backfill(session: AsyncSession, redis: RedisClient, mode: str, backfill_id: str) -> BackfillOut:
    rules = await modes.resolve(session, mode)
    return _view(await _read(BackfillStore(redis, mode), mode, backfill_id), rules.shape.team_size)


async def backfill_poll(
    session: AsyncSession, redis: RedisClient, watch: TicketWatch, mode: str, backfill_id: str, seconds: float
) -> Callable[[], Awaitable[bytes]]:
    """A long-poll on the backfill, made once the mode and the backfill are known (404 now,
    not in the deferred answer), to be run once the request's session is closed."""
    rules = await modes.resolve(session, mode)
    await _read(BackfillStore(redis, mode), mode, backfill_id)
    team_size = rules.shape.team_size
    return lambda: wait_for_backfill(redis, watch, mode, backfill_id, seconds, team_size)


async def wait_for_backfill(
    redis: RedisClient, watch: TicketWatch, mode: str, backfill_id: str, seconds: float, team_size: int
) -> bytes:
    """The backfill (BackfillOut's JSON) as soon as its version moves on from the one it had when
    the poll started (a fill, a new roster), or as it is after `seconds`; 404 once it is gone."""
    store = BackfillStore(redis, mode)
    deadline = time.monotonic() + seconds
    started: int | None = None
    while True:
        # Registered before the read: a change after the read wakes this poll (watch.py).
        with watch.watching(backfill_id) as woken:
            remaining = deadline - time.monotonic()
            live = remaining > 0 and await watch.subscribed(remaining)
            async with watch.readers:
                roster = await _read(store, mode, backfill_id)
            started = roster.record.version if started is None else started
            remaining = deadline - time.monotonic()
            if roster.record.version != started or not live or remaining <= 0:
                return to_json(_view(roster, team_size))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken, remaining)


async def replace_roster(
    session: AsyncSession, redis: RedisClient, mode: str, backfill_id: str, body: BackfillUpdate
) -> BackfillOut:
    """A new roster (players left or joined): it replaces the whole roster, pending fills too
    (their players stay only if listed)."""
    rules = await modes.resolve(session, mode)
    _check_roster(body.teams, rules)
    store = BackfillStore(redis, mode)
    current = await _read(store, mode, backfill_id)
    if body.version is not None and body.version != current.record.version:
        raise Conflict(f"backfill {backfill_id!r} is at version {current.record.version}: read it again")
    record = dataclasses.replace(
        current.record,
        version=current.record.version + 1,
        teams=body.teams,
        ratings=_kept_pseudonyms(current, body.teams, await _ratings(session, mode, rules, body.teams)),
        fills=[],
    )
    try:
        await store.put(backfill_id, time.time(), str(current.record.version), record)
    except Refused as refused:
        _raise_refused(refused, mode, backfill_id)
    return _view(standing(record, {}), rules.shape.team_size)


def _kept_pseudonyms(current: Roster, teams: list[list[str]], ratings: Ratings) -> Ratings:
    """The new roster's ratings, where an erased player's pseudonym the backfill names keeps
    the rating it has there (a pseudonym has no rating row). 422 naming the field for any other
    pseudonym: only erasure puts one on a roster."""
    on_it = {
        name: rated
        for team, team_ratings in zip(current.teams, current.ratings, strict=True)
        for name, rated in zip(team, team_ratings, strict=True)
    }
    for number, team in enumerate(teams):
        for player in team:
            if is_pseudonym(player) and player not in on_it:
                raise _refuse(
                    f"player ids starting with {PSEUDONYM_PREFIX!r} are reserved for erased players;"
                    f" {player!r} is not on this backfill",
                    "teams",
                    number,
                )
    return [
        [
            list(on_it[name]) if is_pseudonym(name) else rated
            for name, rated in zip(team, team_ratings, strict=True)
        ]
        for team, team_ratings in zip(teams, ratings, strict=True)
    ]


async def delete_backfill(session: AsyncSession, redis: RedisClient, mode: str, backfill_id: str) -> None:
    """The game ended or is full: the backfill goes (its pending fills' proposals stand)."""
    await modes.resolve(session, mode)
    try:
        await BackfillStore(redis, mode).put(backfill_id, time.time(), "*", None)
    except Refused as refused:
        _raise_refused(refused, mode, backfill_id)


async def count_backfills(redis: RedisClient, mode: str, team_size: int, now: float) -> tuple[int, int]:
    """The mode's live backfills and their open slots, as their reads show them (a pending
    fill's players hold their slots), for the queue's gauges."""
    store = BackfillStore(redis, mode)
    rosters = await _standing(
        store, [record for record in await store.everything() if record.expires_at > now]
    )
    return len(rosters), sum(max(0, team_size - len(team)) for roster in rosters for team in roster.teams)


def _openings(rosters: Sequence[Roster], team_size: int, now: float) -> list[Opening]:
    """The rosters as the fill search sees them (a mode's rosters all have its teams). Their
    per-team sums are arrays for all the rosters at once, each roster's Opening a row of them:
    four small arrays per backfill cost a matchmaking call more than the sums."""
    mu = np.array(
        [[sum(r[0] for r in team) for team in roster.ratings] for roster in rosters], dtype=np.float64
    )
    var = np.array(
        [[sum(r[1] * r[1] for r in team) for team in roster.ratings] for roster in rosters], dtype=np.float64
    )
    players = np.array([[len(team) for team in roster.teams] for roster in rosters], dtype=np.int64)
    open_slots = np.maximum(team_size - players, 0)
    groups: dict[str, int] = {}
    openings = []
    for number, roster in enumerate(rosters):
        record = roster.record
        if record.attributes not in groups:
            groups[record.attributes] = attribute_group(record.attributes)
        openings.append(
            Opening(
                mu[number],
                var[number],
                players[number],
                open_slots[number],
                groups[record.attributes],
                record.region,
                now - record.created_at,
            )
        )
    return openings


@dataclasses.dataclass(frozen=True, slots=True)
class Served:
    proposals: list[ProposalOut]
    rows: list[int]  # pool rows of the fills claimed
    qualities: list[float]
    tried: list[int]  # pool rows of every fill tried: kept out of this call's new matches


async def serve(
    redis: RedisClient,
    mode: str,
    rules: ModeRules,
    waiting: Waiting,
    now: float,
    state: ProposalState,
    deadline: float | None,
    max_fills: int | None = None,
) -> Served:
    """Fill the mode's live backfills from the waiting tickets, oldest first, each fill claimed
    against its backfill's version, at most `max_fills` of them (None: as many as there are);
    expired backfills are deleted on the way."""
    store = BackfillStore(redis, mode)
    records = await store.everything()
    for record in records:
        if record.expires_at <= now:
            with contextlib.suppress(Refused):
                await store.put(record.backfill_id, now, "*", None)
    return await serve_records(redis, mode, rules, waiting, now, state, deadline, records, max_fills)


async def serve_records(
    redis: RedisClient,
    mode: str,
    rules: ModeRules,
    waiting: Waiting,
    now: float,
    state: ProposalState,
    deadline: float | None,
    records: Sequence[Record],
    max_fills: int | None = None,
) -> Served:
    """serve, with these records of the backfills as read (a fill claims only while its
    backfill still has the version read)."""
    store = BackfillStore(redis, mode)
    live = sorted((r for r in records if r.expires_at > now), key=lambda r: (r.created_at, r.backfill_id))
    if not live:
        return Served([], [], [], [])
    rosters = await _standing(store, live)
    team_size = rules.shape.team_size
    openings = _openings(rosters, team_size, now)
    pool = waiting.pool
    usable = np.ones(len(pool), dtype=np.bool_)
    usable[waiting.avoiding] = False
    fills = await asyncio.to_thread(
        fill_backfills, pool, openings, rules.env.beta, rules.relax, rules.latency, usable
    )
    chosen: list[tuple[Roster, Fill]] = []
    names: dict[int, list[str]] = {}  # each fill's tickets' players, read once
    for roster, fill in zip(rosters, fills, strict=True):
        if fill is None:
            continue
        for row in fill.rows:
            names[row] = players_of(waiting.values[row])
        seated = {name for team in roster.teams for name in team}
        if any(name in seated for row in fill.rows for name in names[row]):
            continue  # a roster player queued meanwhile: never in the game twice
        chosen.append((roster, fill))
    # The oldest backfills' fills go first; the tickets of those past the bound stay free for
    # the call's new matches (none, when the fills take the whole bound).
    chosen = chosen[:max_fills]
    if not chosen:
        return Served([], [], [], [])
    claimed_at = time.time()
    proposal_ids = new_ids(len(chosen), claimed_at)
    fillings: dict[str, Filling] = {}
    waits = pool.waited.tolist()
    claims: list[tuple[ProposalClaim, Record, Record, str]] = []
    for proposal_id, (roster, fill) in zip(proposal_ids, chosen, strict=True):
        fillings[proposal_id] = Filling(roster.record.backfill_id, roster.teams)
        joining = [[name for row in team for name in names[row]] for team in fill.teams]
        rated = [[pair for row in team for pair in ratings_of(waiting.values[row])] for team in fill.teams]
        base = roster.record
        if deadline is None:
            new = base.with_roster(
                base.version + 1,
                [old + more for old, more in zip(base.teams, joining, strict=True)],
                [old + more for old, more in zip(base.ratings, rated, strict=True)],
                base.fills,
            )
            answers = ""
        else:
            new = base.with_roster(
                base.version + 1,
                base.teams,
                base.ratings,
                [*base.fills, PendingFill(proposal_id, joining, rated)],
            )
            answers = json.dumps(
                {name: "accepted" for team in roster.teams for name in team}, separators=(",", ":")
            )
        waited = max(waits[row] for row in fill.rows)
        claims.append((ProposalClaim(fill.teams, fill.quality, waited, base.region), base, new, answers))
    render = ProposalWriter(state, deadline, fillings)
    won = await store.claim(waiting, claims, proposal_ids, claimed_at, rules.ticket_ttl, render, deadline)
    tried = [row for _, fill in chosen for row in fill.rows]
    rows = [row for index, _ in won for row in chosen[index][1].rows]
    return Served(
        render.claimed(won),
        rows,
        [chosen[index][1].quality for index, _ in won],
        tried,
    )
