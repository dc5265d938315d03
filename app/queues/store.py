"""The matchmaking queue in Redis: tickets, holds and the Lua scripts that change them.

Every key of a mode's queue carries the hash tag {mode}, so each script touches one
Redis Cluster slot, and every key a script touches is declared in its KEYS. "v4" names this
layout: keys of earlier ones (mm:{mode}:..., mm:v2:..., mm:v3:...) are never read, and a Redis
that still holds them can drop them (they expire by themselves, bar the first pools). The layout
only grows by additions every release of it reads or ignores (docs/upgrades.md), so releases
serve one queue side by side through a rolling deploy: what a ticket says beyond its record
(roles, avoid lists) is its extension, in its done hash (extension.py).

    mm:v4:{mode}:pool         hash: waiting ticket -> its value (below)
    mm:v4:{mode}:holders      hash: player -> "<expires_at> <ticket>", the player's active ticket,
                              or "0 <ticket>" once that ticket is matched (the player may queue
                              again, and a lookup still finds the match); under a ready check,
                              "<deadline> <ticket>" while the proposal is pending (active until
                              then, as a queued ticket's hold is until its expiry)
    mm:v4:{mode}:done:<min>   hash: a finished ticket -> its status ("matched <proposal>",
                              "cancelled" or "expired"), a claimed proposal -> its JSON,
                              "r:<proposal>" -> what requeueing it needs (or "requeued"),
                              "s:<proposal>" -> its ready check's answers and deadline, and
                              "x:<ticket>" -> a ticket's extension, written when it is queued
    mm:v4:{mode}:deadlines    sorted set: pending proposal -> its ready check's deadline
    mm:v4:{mode}:events       pub/sub channel: the ids of tickets that left the pool (matched,
                              cancelled, expired), 32 hex digits each, run together; and the
                              ids of backfills that changed (same length)
    mm:v4:{mode}:backfills    hash: backfill -> its record's JSON (backfill_store.py), with a
                              version every change raises (a fill's claim checks it)
    mm:v4:{mode}:rostered     hash: player -> the backfill whose roster names them (a player
                              is on one live roster at most; an entry whose backfill is gone,
                              or no longer names the player, counts for nothing)

Ticket and proposal ids are 32 hex digits: the Unix second they were made (8 digits), then
96 random bits. A finished ticket's status goes to the done hash of the minute its id names,
and a proposal to the one of its own id, so reading either is one HGET. A done hash lives
until the ticket TTL plus a day after its latest write (each write extends it): whatever it
holds stays readable at least that long. Hashes per minute rather than a key per ticket:
claiming a thousand tickets then writes two fields per hash touched rather than a thousand
keys, and a minute's hash stays small enough for Redis to drop at once.

A waiting ticket is one field of the pool: its value is a pool record (record.py says its
layout, once, with named fields). A value never changes while its ticket waits. Matchmaking reads every
waiting ticket with one HGETALL and turns the headers into columns with one np.frombuffer:
no JSON and no object per ticket. There is no index by skill and none by age: the pool is
read whole, sorted by skill in NumPy, and its enqueue times say which tickets are past the
TTL (those are swept out as the pool is read).

Queueing a ticket writes two hash fields and nothing else: the pool value and its players'
holds. A hold is a field of one hash rather than a key per player, so scripts can release
the holds of players they read from the pool without naming every player in KEYS first. A
field cannot expire by itself, so a hold carries its ticket's expiry and counts only until
then; matched and cancelled tickets release their holds at once, expired ones when the sweep
reaches them (and only if the hold is still theirs).

Enqueueing is one script for a whole batch. Claiming is one script for all the proposals of
a matchmaking call, and it checks holds rather than the pool: a proposal is taken whole when
every one of its players still holds the hold its ticket wrote, or not at all, so two
callers can never get the same ticket, nor a player two tickets' matches. The expiry and the
attributes of the tickets were checked here, from the pool values just read. A matchmaking
call is two round trips (pool, claim) whatever its size, plus one when some tickets have
expired. The claim keeps each ticket's pool value beside the proposal, so requeueing it puts
the very same value back: the ticket keeps its enqueue time, and so its wait. The scripts
read and write whole batches per Redis command: a Lua redis.call() costs more than the field
it touches.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from app.infra.redis_client import RedisClient
from app.matchmaking.avoid import clashing_rows
from app.matchmaking.latency import Latencies
from app.matchmaking.pool import Pool, attribute_group
from app.queues import extension, record
from app.queues.record import HEADER_BYTES, HEADER_DOUBLES, HeaderField
from app.queues.scripts import (
    CANCEL,
    CLAIM,
    ENQUEUE,
    ERASE_BACKFILLS,
    ERASE_PLAYER,
    EXPIRE,
    FORGET_HOLD,
    READ_TICKET,
    REQUEUE,
    SETTLE,
    reply_text,
    run,
)

# Expired tickets swept per read of the pool; any more wait for the next read.
SWEEP_BATCH = 1000

# A finished ticket's status stays readable this long after its TTL.
RETENTION_SECONDS = 24 * 3600

# Statuses and proposals are kept in one hash per this many seconds of their ids.
DONE_SECONDS = 60

_ID = re.compile(r"[0-9a-f]{32}")


@dataclass(frozen=True, slots=True)
class Keys:
    mode: str

    @property
    def prefix(self) -> str:
        return f"mm:v4:{{{self.mode}}}:"

    def done(self, some_id: str) -> str:
        """The hash that holds a finished ticket's status, or a proposal, by its id's minute."""
        return f"{self.prefix}done:{int(some_id[:8], 16) // DONE_SECONDS}"

    @property
    def pool(self) -> str:
        return f"{self.prefix}pool"

    @property
    def holders(self) -> str:
        return f"{self.prefix}holders"

    @property
    def deadlines(self) -> str:
        """Pending proposals by their ready check's deadline (every instance sweeps it)."""
        return f"{self.prefix}deadlines"

    @property
    def backfills(self) -> str:
        return f"{self.prefix}backfills"

    @property
    def rostered(self) -> str:
        return f"{self.prefix}rostered"

    @property
    def events(self) -> str:
        """The channel the scripts publish the ids of tickets leaving the pool on."""
        return f"{self.prefix}events"


# Every mode's events channel (Keys.events), for one pattern subscription per process.
EVENTS_PATTERN = "mm:v4:{*}:events"


# Named tuples rather than frozen dataclasses: a call builds a thousand of them, and a frozen
# dataclass sets each field through object.__setattr__.
class NewTicket(NamedTuple):
    ticket_id: str
    players: list[str]
    ratings: list[tuple[float, float]]
    attributes: str  # canonical JSON
    latencies: Sequence[tuple[str, float]] = ()  # (region, ms) pairs
    roles: Sequence[Sequence[str]] | None = None  # per player, the roles they accept
    avoid: Sequence[str] = ()  # players none of its players may meet


@dataclass(frozen=True, slots=True)
class TicketState:
    status: str  # queued, matched, cancelled or expired
    match: str | None  # the proposal's JSON, once matched
    pooled: bytes | None = field(default=None, compare=False, repr=False)  # a waiting ticket's value


# Writes a proposal's JSON from its id, what was claimed, its ticket ids, its teams' players and,
# under roles, each player's role.
Render = Callable[[str, "ProposalClaim", list[str], list[list[str]], dict[str, str] | None], bytes]

# What requeueing a proposal did to each of its tickets (the REQUEUE script's codes).
REQUEUED = {0: "cancelled", 1: "queued", 2: "cancelled", 3: "expired"}


# How many overdue proposals one sweep fails; any more wait for the next.
SWEEP_PROPOSALS = 100

# How many times a ticket's read starts again when its proposal failed while it was read
# (QueueStore.ticket): each retry needs another ready check to fail in between.
READ_ATTEMPTS = 3


class Settled(NamedTuple):
    """A ready check's answer (SETTLE): the proposal's state, its players' answers, and for an
    answer that differs from a settled proposal's, the first player who gave it."""

    state: str  # pending, accepted or failed
    answers: dict[str, str]
    conflict: str | None = None


class ProposalClaim(NamedTuple):
    """A proposal to claim: its teams as rows of the pool read (Waiting.pool)."""

    teams: Sequence[Sequence[int]]
    quality: float
    longest_wait: float
    region: str | None = None
    roles: Sequence[Sequence[str]] | None = None  # per row, in team order: its players' roles


@dataclass(frozen=True, slots=True)
class Waiting:
    """One read of the pool: its live tickets as columns, and what claiming them needs."""

    pool: Pool
    values: list[bytes]  # each row's pool value
    expires_at: list[float]  # each row's expiry
    avoiding: list[int] = field(default_factory=list)  # rows whose tickets list players to avoid


class QueueStore:
    """Redis commands and scripts for one mode's queue."""

    def __init__(self, redis: RedisClient, mode: str) -> None:
        self.redis = redis
        self.keys = Keys(mode)

    async def enqueue(self, tickets: Sequence[NewTicket], now: float, ttl: float) -> list[int]:
        """Per ticket: 0 when queued, else the 1-based position of a player who already holds
        an active ticket (an earlier ticket of the same batch counts)."""
        group_of: dict[str, int] = {}
        for ticket in tickets:
            if ticket.attributes not in group_of:
                group_of[ticket.attributes] = attribute_group(ticket.attributes)
        sizes = [len(ticket.players) for ticket in tickets]
        extensions = [
            extension.encode(ticket.roles, ticket.avoid, group_of[ticket.attributes]) for ticket in tickets
        ]
        # The numbers travel as doubles, packed here: exact, and no decimal text to write or parse.
        ratings = np.array([r for ticket in tickets for r in ticket.ratings], dtype="<f8").reshape(-1, 2)
        starts = np.cumsum([0, *sizes[:-1]])
        headers = np.empty((len(tickets), HEADER_DOUBLES), dtype=record.DOUBLE)
        headers[:, HeaderField.ENQUEUED_AT] = now
        headers[:, HeaderField.GROUP] = [
            extension.extended_group(ticket.ticket_id) if text else group_of[ticket.attributes]
            for ticket, text in zip(tickets, extensions, strict=True)
        ]
        headers[:, HeaderField.PLAYERS] = sizes
        headers[:, HeaderField.MU_SUM] = _party_sums(ratings[:, 0], starts, sizes)
        headers[:, HeaderField.VAR_SUM] = _party_sums(ratings[:, 1] * ratings[:, 1], starts, sizes)
        expires_at = now + ttl
        headers[:, HeaderField.EXPIRES_AT] = expires_at
        headers[:, HeaderField.REGIONS] = [len(ticket.latencies) for ticket in tickets]
        header_bytes, rating_bytes = headers.tobytes(), ratings.tobytes()
        keys = [self.keys.pool, self.keys.holders]
        # The script writes each player's hold as hold(expires_at, ticket) does.
        args: list[str | bytes | int] = [repr(now), repr(expires_at), _kept(ttl)]
        for number, (ticket, start) in enumerate(zip(tickets, starts.tolist(), strict=True)):
            value = record.encode(
                header_bytes[HEADER_BYTES * number : HEADER_BYTES * (number + 1)],
                rating_bytes[
                    record.PLAYER_BYTES * start : record.PLAYER_BYTES * (start + len(ticket.players))
                ],
                [ms for _, ms in ticket.latencies],
                ticket.attributes,
                [name for name, _ in ticket.latencies],
                ticket.players,
            )
            done = 0
            if extensions[number]:
                key = self.keys.done(ticket.ticket_id)
                if key not in keys:
                    keys.append(key)
                done = keys.index(key) + 1
            args += [ticket.ticket_id, value, done, extensions[number], len(ticket.players), *ticket.players]
        result = await run(self.redis, ENQUEUE, keys, args)
        return [int(r) for r in result]

    async def ticket(self, ticket_id: str, now: float) -> TicketState | None:
        """The ticket's status (queued, matched, cancelled or expired) and, once matched, its
        proposal's JSON; None if the queue never had it (or forgot it after the retention)."""
        if not is_queue_id(ticket_id):
            return None
        keys = [self.keys.pool, self.keys.done(ticket_id)]
        found: TicketState | None = None
        for _ in range(READ_ATTEMPTS):
            # The pool and the status at one instant (READ_TICKET says why).
            value, status = await run(self.redis, READ_TICKET, keys, [ticket_id], writes=False)
            if value is not None:
                expires_at = record.field_of(value, HeaderField.EXPIRES_AT)
                return TicketState("queued" if expires_at > now else "expired", None, value)
            if status is None:
                return None
            state, _, proposal = reply_text(status).partition(" ")
            body = await self.redis.hget(self.keys.done(proposal), proposal) if proposal else None
            found = TicketState(state, reply_text(body) if body is not None else None)
            if not _failed_since(state, proposal, body):
                return found
        return found

    async def finished(self, ticket_ids: Sequence[str]) -> list[TicketState | None]:
        """The statuses of tickets that left the pool, with their proposals, in two round trips
        whatever their number; None for a ticket with no status (still waiting, or requeued),
        or whose proposal failed between the two (its status has changed since: read it again)."""
        statuses = await self.done_fields(ticket_ids)
        states = [reply_text(status).partition(" ") if status is not None else None for status in statuses]
        proposals = sorted({state[2] for state in states if state is not None and state[2]})
        bodies = dict(zip(proposals, await self.done_fields(proposals), strict=True))
        return [
            None
            if state is None or _failed_since(state[0], state[2], bodies.get(state[2]))
            else TicketState(state[0], reply_text(bodies[state[2]]) if bodies.get(state[2]) else None)
            for state in states
        ]

    async def done_fields(self, ids: Sequence[str], prefix: str = "") -> list[Any]:
        """The done-hash fields of these ids (each prefixed), one HMGET per hash, in one
        pipelined round trip."""
        by_second: dict[str, list[int]] = {}
        for number, some_id in enumerate(ids):
            by_second.setdefault(some_id[:8], []).append(number)
        by_key: dict[str, list[int]] = {}
        for second, numbers in by_second.items():
            by_key.setdefault(self.keys.done(second), []).extend(numbers)
        found: list[Any] = [None] * len(ids)
        if not by_key:
            return found
        async with self.redis.pipeline(transaction=False) as pipe:
            for key, numbers in by_key.items():
                pipe.hmget(key, [prefix + ids[number] for number in numbers])
            replies = await pipe.execute()
        for numbers, values in zip(by_key.values(), replies, strict=True):
            for number, value in zip(numbers, values, strict=True):
                found[number] = value
        return found

    async def player_ticket(self, player: str, now: float) -> tuple[str, TicketState] | None:
        """The player's active ticket: queued, or matched in a proposal that stands (its status
        stays "matched" until the proposal is requeued), with its id; None otherwise."""
        held = await self.redis.hget(self.keys.holders, player)
        if held is None:
            return None
        expires_at, _, ticket_id = reply_text(held).partition(" ")
        if float(expires_at) and float(expires_at) <= now:
            return None  # a hold that lapsed with its ticket
        state = await self.ticket(ticket_id, now)
        if state is None or state.status not in ("queued", "matched"):
            return None
        return ticket_id, state

    async def waiting(self, now: float, ttl: float) -> Waiting:
        """Every waiting, unexpired ticket, in one round trip (two when some tickets have
        extensions); tickets past the TTL are swept out on the way (one more round trip, only
        when there are some)."""
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.pool)  # type: ignore[assignment]
        headers = record.headers_of(list(raw.values()))
        waited = now - headers[:, HeaderField.ENQUEUED_AT]
        expiry = headers[:, HeaderField.EXPIRES_AT]
        ids = [key.decode() for key in raw]
        lapsed = np.nonzero((waited >= ttl) | (expiry <= now))[0]
        if len(lapsed):
            await self._sweep([ids[i] for i in lapsed[:SWEEP_BATCH].tolist()], now, ttl)
        live = np.nonzero((waited < ttl) & (expiry > now))[0]
        headers = headers[live]
        values = list(raw.values())
        live_values = [values[i] for i in live.tolist()]
        live_ids = [ids[i] for i in live.tolist()]
        players = headers[:, HeaderField.PLAYERS].astype(np.int64)
        groups = headers[:, HeaderField.GROUP].astype(np.int64)
        extended = np.flatnonzero(groups < 0).tolist()
        roles: list[extension.TicketRoles | None] | None = None
        clashes = None
        avoiding: list[int] = []
        if extended:
            read = await self.done_fields([live_ids[row] for row in extended], extension.FIELD_PREFIX)
            roles, clashes, avoiding = _extensions(live_values, players, groups, extended, read)
        pool = Pool(
            live_ids,
            players,
            headers[:, HeaderField.MU_SUM].copy(),
            headers[:, HeaderField.VAR_SUM].copy(),
            waited[live],
            groups,
            _latencies(live_values, players, headers[:, HeaderField.REGIONS].astype(np.int64)),
            roles,
            clashes,
        )
        return Waiting(pool, live_values, headers[:, HeaderField.EXPIRES_AT].tolist(), avoiding)

    async def claim(
        self,
        waiting: Waiting,
        claims: Sequence[ProposalClaim],
        now: float,
        ttl: float,
        render: Render,
        deadline: float | None = None,
    ) -> list[tuple[int, str]]:
        """Claim each proposal whose tickets all still wait, unexpired, with equal attributes:
        the index and the id of each claimed. `render` writes a proposal's JSON, which is kept
        here for the lookups of its tickets (the API's shape: this store only keeps it). With a
        `deadline`, each proposal's ready check runs until then (SETTLE settles it)."""
        keys, args, tried = self.claim_arguments(
            waiting, claims, new_ids(len(claims), now), now, ttl, render, deadline
        )
        if not tried:
            return []
        claimed = await run(self.redis, CLAIM, keys, args)
        won = [int(number) - 1 for number in claimed]
        return [tried[number] for number in won]

    def claim_arguments(
        self,
        waiting: Waiting,
        claims: Sequence[ProposalClaim],
        proposal_ids: Sequence[str],
        now: float,
        ttl: float,
        render: Render,
        deadline: float | None = None,
    ) -> tuple[list[str], list[str | bytes | int], list[tuple[int, str]]]:
        """CLAIM's KEYS and ARGV for these proposals (BACKFILL_CLAIM extends them), and the
        index and id of each proposal they try: those with an expired ticket, or tickets of
        attributes that differ, are left out."""
        ids, sizes = waiting.pool.ids, waiting.pool.size.tolist()
        keys = [self.keys.pool, self.keys.holders, self.keys.deadlines]
        key_of: dict[str, int] = {}  # an id's second (its first 8 digits) -> its done hash in KEYS

        def key_number(some_id: str) -> int:
            """The 1-based number in KEYS of the done hash for this id's minute."""
            number = key_of.get(some_id[:8])
            if number is None:
                key = self.keys.done(some_id)
                if key not in keys:
                    keys.append(key)
                number = key_of[some_id[:8]] = keys.index(key) + 1
            return number

        if claims:
            key_number(proposal_ids[0])  # KEYS[4]: the proposals' hash (all made this second)
        args: list[str | bytes | int] = [_kept(ttl), "0" if deadline is None else repr(deadline)]
        tried: list[tuple[int, str]] = []
        expires_at, values = waiting.expires_at, waiting.values
        for index, (claim, proposal_id) in enumerate(zip(claims, proposal_ids, strict=True)):
            rows = [row for team in claim.teams for row in team]
            if any(expires_at[row] <= now for row in rows):
                continue
            # A value's tail: the canonical attributes, the regions, the players' JSON array,
            # a newline between each.
            tails = [record.tail(values[row], sizes[row]) for row in rows]
            if any(tail[0] != tails[0][0] for tail in tails):
                continue  # two attribute sets whose digests collide
            # The players' JSON array holds identifiers (no escapes): cut rather than decoded.
            players = {
                row: tail[2][2:-2].decode().split('","') for row, tail in zip(rows, tails, strict=True)
            }
            teams = [[name for row in team for name in players[row]] for team in claim.teams]
            roles = None
            if claim.roles is not None:
                roles = {
                    name: role
                    for row, names in zip(rows, claim.roles, strict=True)
                    for name, role in zip(players[row], names, strict=True)
                }
            body = render(proposal_id, claim, [ids[row] for row in rows], teams, roles)
            # What a requeue puts back: each ticket's id, its pool value and its hold's expiry.
            kept = b"".join(
                record.kept(ids[row], values[row], repr(expires_at[row]).encode()) for row in rows
            )
            args += [proposal_id, body, kept, len(rows)]
            for row in rows:
                names = players[row]
                ticket_id = ids[row]
                held = hold(expires_at[row], ticket_id)
                args += [ticket_id, key_number(ticket_id), held, len(names), *names]
            tried.append((index, proposal_id))
        return keys, args, tried

    async def proposal(self, proposal_id: str) -> str | None:
        """A claimed proposal's JSON; None if the queue never made it (or forgot it)."""
        if not is_queue_id(proposal_id):
            return None
        body = await self.redis.hget(self.keys.done(proposal_id), proposal_id)
        return None if body is None else reply_text(body)

    async def requeue(
        self, proposal_id: str, ticket_ids: Sequence[str], cancel: Sequence[str], now: float, ttl: float
    ) -> list[str] | None:
        """Undo a proposal in one script: the `cancel` tickets are cancelled, the others go back
        to the pool with their original values (their enqueue time kept). Per ticket, in
        `ticket_ids` order: "queued", "cancelled" (listed, or a player holds a newer ticket)
        or "expired" (past its TTL). None if the proposal was requeued already."""
        keys, where = self._proposal_keys(proposal_id, ticket_ids)
        args: list[str | int] = [proposal_id, repr(now), _kept(ttl), len(cancel), *cancel, *where]
        outcome = await run(self.redis, REQUEUE, keys, args)
        if not outcome:
            return None
        return [REQUEUED[int(code)] for code in outcome]

    def _proposal_keys(
        self, proposal_id: str, ticket_ids: Sequence[str]
    ) -> tuple[list[str], list[str | int]]:
        """KEYS of a script that settles a proposal (pool, holders, deadlines, its done hash,
        its tickets' done hashes) and, per ticket, its id and its done hash's number there."""
        keys = [self.keys.pool, self.keys.holders, self.keys.deadlines, self.keys.done(proposal_id)]
        where: list[str | int] = []
        for ticket_id in ticket_ids:
            key = self.keys.done(ticket_id)
            if key not in keys:
                keys.append(key)
            where += [ticket_id, keys.index(key) + 1]
        return keys, where

    async def settle(
        self,
        proposal_id: str,
        ticket_ids: Sequence[str],
        answer: str,
        players: Sequence[str],
        now: float,
        ttl: float,
    ) -> Settled | None:
        """Record the players' answer ("accepted" or "declined") to the proposal's ready check,
        or with "expired" fail it if its deadline has passed (SETTLE says what follows). None
        if the queue does not know the proposal."""
        keys, where = self._proposal_keys(proposal_id, ticket_ids)
        args: list[str | int] = [proposal_id, repr(now), _kept(ttl), answer, len(players), *players, *where]
        reply = [reply_text(part) for part in await run(self.redis, SETTLE, keys, args)]
        if reply[0] == "unknown":
            return None
        if reply[0] == "conflict":
            return Settled(reply[1], _answers(reply[2]), reply[3])
        return Settled(reply[0], _answers(reply[1]))

    async def answers(self, proposal_id: str) -> dict[str, str]:
        """The answers given so far to the proposal's ready check (none without one)."""
        return _answers(await self.redis.hget(self.keys.done(proposal_id), "s:" + proposal_id))

    async def sweep_deadlines(self, now: float, ttl: float) -> int:
        """Fail the pending proposals whose ready check's deadline has passed (SETTLE with
        "expired": should several instances sweep at once, one fails each proposal, the others
        find it settled). How many this call failed."""
        due = [
            reply_text(some_id)
            for some_id in await self.redis.zrangebyscore(
                self.keys.deadlines, "-inf", now, start=0, num=SWEEP_PROPOSALS
            )
        ]
        if not due:
            return 0
        failed = 0
        for proposal_id, body in zip(due, await self.done_fields(due), strict=True):
            ticket_ids = json.loads(body)["ticket_ids"] if body is not None else []
            settled = await self.settle(proposal_id, ticket_ids, "expired", [], now, ttl)
            failed += settled is not None and settled.state == "failed"
        return failed

    async def holders_of(self, players: Sequence[str]) -> dict[str, str]:
        """The ticket each of these players holds (whatever its state), by player."""
        held = await self.redis.hmget(self.keys.holders, list(players))
        return {
            player: reply_text(hold).partition(" ")[2]
            for player, hold in zip(players, held, strict=True)
            if hold is not None
        }

    async def cancel(self, ticket_id: str, ttl: float) -> int:
        """-1 unknown, 1 cancelled (or already finished), 2 already matched."""
        if not is_queue_id(ticket_id):
            return -1
        keys = [self.keys.pool, self.keys.holders, self.keys.done(ticket_id)]
        return int(await run(self.redis, CANCEL, keys, [ticket_id, _kept(ttl)]))

    async def _sweep(self, ids: list[str], now: float, ttl: float) -> int:
        """Take the tickets still waiting past their expiry out of the pool (they then read as
        expired); how many there were."""
        keys = [self.keys.pool, self.keys.holders]
        args: list[str | int] = [repr(now), _kept(ttl)]
        for ticket_id in ids:
            key = self.keys.done(ticket_id)
            if key not in keys:
                keys.append(key)
            args += [ticket_id, keys.index(key) + 1]
        return int(await run(self.redis, EXPIRE, keys, args))

    async def erase_player(self, player: str, pseudonym: str, now: float, ttl: float) -> int:
        """Erasure (app.erasure): cancel every ticket in the pool that names the player
        (a party's ticket whole), drop their hold, rename them to the pseudonym in every
        backfill's roster and pending fills (each such backfill's version one up) and drop their
        rostered entry, then rename them in every proposal kept (and in what a requeue would put
        back, which then reads as expired). How many tickets, backfills and proposals that
        touched.

        In this order: once their tickets are cancelled no fill can seat the player anew, and a
        fill claimed before the backfills' step (its proposal names the roster, the player on
        it) is in a done hash the scan then reads; a fill chosen from a record as read before
        that step claims nothing after it (the version moved)."""
        quoted = f'"{player}"'.encode()  # players are identifiers: JSON needs no escaping
        raw: dict[bytes, bytes] = await self.redis.hgetall(self.keys.pool)  # type: ignore[assignment]
        named = [
            ticket.decode()
            for ticket, value in raw.items()
            if quoted in record.tail(value, int(record.field_of(value, HeaderField.PLAYERS)))[2]
        ]
        touched = 0
        for ticket_id in named:
            touched += await self.cancel(ticket_id, ttl) == 1
        # What is left is a matched ticket's hold, a lapsed one, or that of a ticket queued since
        # the pool was read (the player's next life: it stays).
        held = await self.redis.hget(self.keys.holders, player)
        if held is not None:
            expires_at, _, ticket_id = reply_text(held).partition(" ")
            # A hold under a pending ready check counts until its deadline, yet names a match.
            state = await self.ticket(ticket_id, now) if float(expires_at) > now else None
            if float(expires_at) <= now or (state is not None and state.status == "matched"):
                await run(self.redis, FORGET_HOLD, [self.keys.holders], [player, held])
        keys = [self.keys.backfills, self.keys.rostered]
        touched += int(await run(self.redis, ERASE_BACKFILLS, keys, [quoted.decode(), f'"{pseudonym}"']))
        async for key in self.redis.scan_iter(match=f"{self.keys.prefix}done:*", count=1000):
            touched += int(
                await run(self.redis, ERASE_PLAYER, [reply_text(key)], [quoted.decode(), f'"{pseudonym}"'])
            )
        return touched

    async def stats(self, now: float, ttl: float) -> tuple[int, int, float]:
        """(tickets, players, oldest wait in seconds) of the waiting tickets."""
        pool = (await self.waiting(now, ttl)).pool
        oldest = float(pool.waited.max()) if len(pool) else 0.0
        return len(pool), int(pool.size.sum()), oldest


def new_ids(count: int, now: float) -> list[str]:
    """Fresh ticket or proposal ids: the Unix second as 8 hex digits, then 96 random bits
    (one read of the system's randomness for all of them)."""
    second = f"{int(now):08x}"
    digits = os.urandom(12 * count).hex()
    return [second + digits[24 * i : 24 * (i + 1)] for i in range(count)]


def is_queue_id(some_id: str) -> bool:
    """Whether a ticket, proposal or backfill id has the shape new_ids gives them (anything
    else is unknown at once, before any key is named after it)."""
    return _ID.fullmatch(some_id) is not None


def hold(expires_at: float, ticket_id: str) -> str:
    """A player's hold on a ticket, as the enqueue script writes it (repr round-trips a float
    exactly, so the claim can rebuild it from the pool value's header)."""
    return f"{expires_at!r} {ticket_id}"


def _party_sums(values: npt.NDArray[np.float64], starts: npt.NDArray[np.int64], sizes: list[int]) -> Any:
    """Each ticket's sum of its players' values, added left to right as Python's sum() does
    (np.add.reduceat may pair them differently and round differently in the last bit)."""
    counts = np.array(sizes)
    total = values[starts].copy()
    for offset in range(1, max(sizes)):
        more = counts > offset
        total[more] += values[starts[more] + offset]
    return total


def _extensions(
    values: list[bytes], players: Any, groups: Any, extended: list[int], read: list[Any]
) -> tuple[list[extension.TicketRoles | None] | None, Any, list[int]]:
    """From the extensions of the rows that have one: the pool's roles (None when no ticket
    lists any), clashing rows (None without avoid lists) and the rows that avoid anyone. Each
    extended row's true group is set from its attributes (extension.py), in `groups`."""
    sizes = players.tolist()
    decoded: dict[Any, extension.Extension] = {}
    digests: dict[bytes, int] = {}
    roles: list[extension.TicketRoles | None] = [None] * len(values)
    avoid: list[tuple[str, ...]] = [()] * len(values)
    for row, text in zip(extended, read, strict=True):
        found = decoded.get(text)
        if found is None:
            found = decoded[text] = extension.decode(text)
        if not found.readable:
            continue  # its record's group of one keeps it out of every match this release forms
        roles[row], avoid[row] = found.roles, found.avoid
        group = found.group
        if group is None:  # an extension that no longer says it (erasure emptied it)
            attributes = record.tail(values[row], sizes[row])[0]
            group = digests.get(attributes)
            if group is None:
                group = digests[attributes] = attribute_group(attributes.decode())
        groups[row] = group
    clashes = None
    if any(avoid):
        # Players are identifiers (no escapes in JSON): the array is cut rather than decoded.
        names = [
            record.tail(value, size)[2][2:-2].decode().split('","')
            for value, size in zip(values, sizes, strict=True)
        ]
        clashes = clashing_rows(names, avoid)
    avoiding = [row for row, names in enumerate(avoid) if names]
    return (roles if any(r is not None for r in roles) else None), clashes, avoiding


def _latencies(values: list[bytes], players: Any, counts: Any) -> Latencies | None:
    """The pool's latency columns, from the values of the tickets that list regions: grouped by
    their list of names (a queue's tickets mostly share a few), so each group is one read."""
    located = np.flatnonzero(counts).tolist()
    if not located:
        return None
    by_names: dict[bytes, tuple[list[int], list[bytes]]] = {}
    sizes, lengths = players.tolist(), counts.tolist()
    for row in located:
        value = values[row]
        start, end = record.latency_span(value, sizes[row], lengths[row])
        # The tail: attributes, a newline, the region names, a newline, the players.
        names = value[end:].split(b"\n", 2)[1]
        rows, doubles = by_names.setdefault(names, ([], []))
        rows.append(row)
        doubles.append(value[start:end])
    regions = sorted({name for names in by_names for name in names.split(b"\t")})
    column = {name: number for number, name in enumerate(regions)}
    ms = np.zeros((len(values), len(regions)))
    located_rows = np.zeros(len(values), dtype=np.bool_)
    located_rows[located] = True
    ms[located_rows] = np.inf
    for names, (rows, doubles) in by_names.items():
        columns = [column[name] for name in names.split(b"\t")]
        block = np.frombuffer(b"".join(doubles), dtype="<f8").reshape(len(rows), len(columns))
        ms[np.ix_(rows, columns)] = block
    return Latencies([name.decode() for name in regions], ms, located_rows)


def _failed_since(status: str, proposal: str, body: Any) -> bool:
    """Whether a status read as "matched <proposal>" meets that proposal failed, read after it.
    The step that fails a proposal also cancels or requeues every ticket of it (_PUTBACK,
    scripts.py), so no ticket stays matched in a failed proposal: the status was read before
    the failure, and the ticket has moved on. (A proposal's JSON starts with its id, then its
    state, as the scripts read it.)"""
    return (
        status == "matched"
        and body is not None
        and reply_text(body).startswith(f'{{"proposal_id":"{proposal}","state":"failed"')
    )


def _answers(record: Any) -> dict[str, str]:
    """The answers of a ready check's record ("s:<proposal>", SETTLE)."""
    if not record:
        return {}
    found: dict[str, str] = json.loads(record)["answers"] or {}
    return found


def _kept(ttl: float) -> int:
    """Seconds a ticket or proposal stays readable: its TTL, then the retention."""
    return int(ttl + RETENTION_SECONDS)
