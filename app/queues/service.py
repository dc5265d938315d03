"""Matchmaking queue use cases: tickets in, best-quality matches out, never a ticket twice."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import logging
import time
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession

from app import metrics
from app.errors import Conflict, NotFound, ValidationFailed
from app.infra.redis_client import UNAVAILABLE, RedisClient
from app.matchmaking import waits
from app.matchmaking.proposals import MatchShape, canonical_attributes, form_matches
from app.modes import service as modes
from app.modes.schemas import QUEUE_DEFAULTS
from app.players import repository as players
from app.queues import backfills, record
from app.queues.proposals import ProposalWriter
from app.queues.record import HeaderField
from app.queues.schemas import (
    AVOID_PER_PLAYER,
    AnswerIn,
    MatchmakeOut,
    ProposalDetail,
    ProposalOut,
    ProposalState,
    QueueStats,
    RegionWaiting,
    RequeuedTicket,
    RequeueIn,
    RequeueOut,
    TicketBatchIn,
    TicketBatchOut,
    TicketCreated,
    TicketIn,
    TicketOut,
    TicketOutcome,
    WindowStats,
    to_json,
)
from app.queues.schemas import (
    QueueStatistics as QueueStatisticsOut,
)
from app.queues.statistics import ESTIMATE_REFRESH_S, QueueStatistics, pool_regions
from app.queues.store import NewTicket, ProposalClaim, QueueStore, TicketState, Waiting, new_ids
from app.queues.watch import TicketWatch

log = logging.getLogger(__name__)

FloatArray = npt.NDArray[np.float64]
# When each mode's wait estimates were last rebuilt by this process (statistics.py).
_estimated_at: dict[str, float] = {}

# Below every group a ticket can have (attribute digests are 48-bit, extended groups are
# negative ids' digests): a ticket given OUT_OF_REACH - row is in a group of one.
OUT_OF_REACH = -(2**62)

# The retention a read without the mode's rules at hand keeps statuses for (store.py).
DEFAULT_TTL = QUEUE_DEFAULTS["ticket_ttl_seconds"]


async def create_ticket(
    session: AsyncSession, redis: RedisClient, mode: str, body: TicketIn
) -> TicketCreated:
    """Queue one ticket; 409 if one of its players already holds an active ticket (queued, or
    in a pending proposal: the message names it)."""
    (ticket,), (clash,), now = await _enqueue(session, redis, mode, [body], ["body"])
    if clash:
        (message,) = await _held(redis, mode, [(ticket, clash)], now)
        raise Conflict(message)
    return TicketCreated(
        ticket_id=ticket.ticket_id, status="queued", created_at=dt.datetime.fromtimestamp(now, dt.UTC)
    )


async def create_tickets(session: AsyncSession, redis: RedisClient, mode: str, body: TicketBatchIn) -> bytes:
    """Queue a batch of tickets; the JSON of TicketBatchOut. A ticket whose player already holds
    an active ticket (or is in an earlier ticket of the batch) is rejected on its own."""
    tickets, clashes, now = await _enqueue(session, redis, mode, body.tickets, ["body", "tickets"])
    # Built unvalidated (model_construct): every value is ours, and validating a thousand
    # outcomes would cost more than queueing them.
    created = dt.datetime.fromtimestamp(now, dt.UTC)
    messages = iter(
        await _held(redis, mode, [(t, c) for t, c in zip(tickets, clashes, strict=True) if c], now)
    )
    outcomes = [
        TicketOutcome.model_construct(
            ticket_id=ticket.ticket_id, status="queued", created_at=created, detail=None
        )
        if clash == 0
        else TicketOutcome.model_construct(
            ticket_id=None, status="rejected", created_at=None, detail=next(messages)
        )
        for ticket, clash in zip(tickets, clashes, strict=True)
    ]
    return to_json(TicketBatchOut.model_construct(tickets=outcomes))


async def _enqueue(
    session: AsyncSession, redis: RedisClient, mode: str, tickets: list[TicketIn], where: list[str]
) -> tuple[list[NewTicket], list[int], float]:
    """Validate every ticket (a malformed one rejects them all), read the players' ratings
    (unseen players start at the mode's prior) and queue them in one script. Returns the
    tickets, each one's clash (0, or the 1-based position of a player already holding a
    ticket) and the time they were queued."""
    rules = await modes.resolve(session, mode)
    for number, ticket in enumerate(tickets):
        loc: list[str | int] = [*where, number] if len(where) > 1 else [*where]
        _check_ticket(ticket, rules.shape, loc)
    known = await players.current_ratings(session, mode, list({p for t in tickets for p in t.players}))
    prior = (rules.env.mu, rules.env.sigma)
    now = time.time()
    queued = [
        NewTicket(
            ticket_id,
            ticket.players,
            [known.get(p, prior) for p in ticket.players],
            canonical_attributes(ticket.attributes) if ticket.attributes else "{}",
            list(ticket.latencies.items()),
            [ticket.roles[p] for p in ticket.players] if ticket.roles is not None else None,
            sorted(set(ticket.avoid)),
        )
        for ticket_id, ticket in zip(new_ids(len(tickets), now), tickets, strict=True)
    ]
    store = QueueStore(redis, mode)
    if rules.accept_timeout is not None:
        await store.sweep_deadlines(now, rules.ticket_ttl)  # a failed check may free some players
    clashes = await store.enqueue(queued, now, rules.ticket_ttl)
    return queued, clashes, now


def _check_ticket(ticket: TicketIn, shape: MatchShape, loc: list[str | int]) -> None:
    """422 naming the field for a ticket the mode can never match: a player twice, a party
    larger than a team, roles the mode does not have or that cannot fill one team, an avoid
    list naming the ticket's own players or too long."""

    def refuse(message: str, *where: str | int) -> None:
        raise ValidationFailed(message, errors=[{"loc": [*loc, *where], "msg": message}])

    players = ticket.players
    if len(set(players)) != len(players):
        refuse("a player appears twice in the ticket", "players")
    if len(players) > shape.team_size:
        refuse(f"a party of {len(players)} does not fit teams of {shape.team_size}", "players")
    composition = shape.composition
    if ticket.roles is not None and composition is None:
        refuse("the mode has no roles: set them with PUT /v1/modes/{mode} first", "roles")
    if composition is not None:
        listed = ticket.roles or {}
        for player in listed:
            if player not in players:
                refuse(f"{player!r} is not a player of the ticket", "roles", player)
        for player in players:
            if player not in listed:
                refuse(
                    f"player {player!r} lists no role (the mode's roles: {', '.join(composition.roles)})",
                    "roles",
                )
            unknown = [name for name in listed[player] if name not in composition.roles]
            if unknown:
                refuse(
                    f"unknown role {unknown[0]!r} (the mode's roles: {', '.join(composition.roles)})",
                    "roles",
                    player,
                )
        masks = [composition.mask(listed[p]) for p in players]
        if not composition.fits(masks):
            counts = ", ".join(
                f"{role}: {count}" for role, count in zip(composition.roles, composition.counts, strict=True)
            )
            refuse(f"the party's roles cannot fill one team of the composition ({counts})", "roles")
    for position, player in enumerate(ticket.avoid):
        if player in players:
            refuse(f"a ticket cannot avoid its own player {player!r}", "avoid", position)
    if len(ticket.avoid) > AVOID_PER_PLAYER * len(players):
        refuse(f"at most {AVOID_PER_PLAYER} ids per player of the ticket may be avoided", "avoid")


async def _held(redis: RedisClient, mode: str, clashes: list[tuple[NewTicket, int]], now: float) -> list[str]:
    """Why each ticket was refused: its player holds a queued ticket, or is in a pending
    proposal (named). Three round trips at most, whatever the number of refusals."""
    if not clashes:
        return []
    store = QueueStore(redis, mode)
    players = [ticket.players[clash - 1] for ticket, clash in clashes]
    held = await store.holders_of(players)
    ticket_ids = sorted(set(held.values()))
    states = dict(zip(ticket_ids, await store.finished(ticket_ids), strict=True))
    messages = []
    for player in players:
        state = states.get(held.get(player, ""))
        proposal = _proposal(state.match) if state is not None and state.match else None
        if proposal is not None and proposal.state == "pending":
            messages.append(
                f"player {player!r} is in pending proposal {proposal.proposal_id!r} in {mode!r}: "
                "they may queue again once it is declined, failed or accepted"
            )
        else:
            messages.append(f"player {player!r} already holds an active ticket in {mode!r}")
    return messages


async def get_ticket(redis: RedisClient, mode: str, ticket_id: str) -> bytes:
    """The JSON of TicketOut."""
    return await _ticket_json(
        redis, mode, ticket_id, await _read_ticket(QueueStore(redis, mode), mode, ticket_id)
    )


async def _read_ticket(store: QueueStore, mode: str, ticket_id: str) -> TicketState:
    """The ticket's state; a proposal of it whose ready check is overdue fails first (any
    queue call sweeps, not only the instances' background sweep)."""
    now = time.time()
    ticket = await store.ticket(ticket_id, now)
    if ticket is None:
        raise NotFound(f"no ticket {ticket_id!r} in {mode!r}")
    proposal = _proposal(ticket.match) if ticket.match else None
    if proposal is not None and _overdue(proposal, now):
        rules = modes.cached(mode)
        await store.sweep_deadlines(now, rules.ticket_ttl if rules else DEFAULT_TTL)
        ticket = await store.ticket(ticket_id, now) or ticket
    return ticket


def _overdue(proposal: ProposalOut, now: float) -> bool:
    """A pending proposal whose ready check's deadline has passed (a sweep fails it)."""
    return (
        proposal.state == "pending" and proposal.deadline is not None and proposal.deadline.timestamp() <= now
    )


# What a long-poll compares (_phase) for a ticket that has left the queue for good: no change
# of it is to come, so its poll answers at once.
SETTLED = "settled"


def _phase(ticket: TicketState) -> str:
    """Where the ticket stands, as a long-poll compares it: "queued", the id of the pending
    proposal it is in (a new proposal is news, even when the poll missed the failure of the
    one before), or SETTLED (matched in an accepted proposal, cancelled, expired)."""
    if ticket.status == "queued":
        return "queued"
    if ticket.status == "matched" and ticket.match:
        proposal = _proposal(ticket.match)
        if proposal.state == "pending":
            return proposal.proposal_id
    return SETTLED


async def wait_for_ticket(
    redis: RedisClient, watch: TicketWatch, mode: str, ticket_id: str, seconds: float, seen: str | None = None
) -> bytes:
    """The ticket (the JSON of TicketOut) as soon as its phase (_phase) differs from `seen`
    (what the client saw last: "queued" or a pending proposal's id; by default the phase it
    has when the poll starts), at once if it is settled, or as it is after `seconds`. Every
    change of phase publishes the ticket (scripts.py), so the poll wakes on each."""
    store = QueueStore(redis, mode)
    deadline = time.monotonic() + seconds
    while True:
        # Registered before the read: an event after the read wakes this poll (watch.py).
        with watch.watching(ticket_id) as woken:
            remaining = deadline - time.monotonic()
            live = remaining > 0 and await watch.subscribed(remaining)
            async with watch.readers:
                ticket = await _read_ticket(store, mode, ticket_id)
            phase = _phase(ticket)
            seen = seen or phase
            remaining = deadline - time.monotonic()
            if phase == SETTLED or phase != seen or not live or remaining <= 0:
                return await _ticket_json(redis, mode, ticket_id, ticket)
            with contextlib.suppress(TimeoutError):
                # Woken with the ticket's new state, read for all the polls an event woke (None:
                # back in the pool, or unread: read it again above).
                state = await asyncio.wait_for(woken, remaining)
                if state is not None and _phase(state) != seen:
                    return await _ticket_json(redis, mode, ticket_id, state)


async def player_ticket(redis: RedisClient, mode: str, player: str) -> TicketOut:
    """The player's active ticket: queued, or matched in a proposal that stands."""
    found = await QueueStore(redis, mode).player_ticket(player, time.time())
    if found is None:
        raise NotFound(f"player {player!r} holds no active ticket in {mode!r}")
    return await _ticket_view(redis, mode, *found)


async def _ticket_json(redis: RedisClient, mode: str, ticket_id: str, ticket: TicketState) -> bytes:
    return to_json(await _ticket_view(redis, mode, ticket_id, ticket))


async def _ticket_view(redis: RedisClient, mode: str, ticket_id: str, ticket: TicketState) -> TicketOut:
    """The ticket as TicketOut; a queued one with its wait estimate (statistics.py)."""
    estimate = None
    if ticket.status == "queued" and ticket.pooled is not None:
        waited = time.time() - record.field_of(ticket.pooled, HeaderField.ENQUEUED_AT)
        estimate = await QueueStatistics(redis, mode).estimate(ticket.pooled, waited, time.time())
    return _ticket_out(ticket_id, ticket, estimate)


def _proposal(body: str) -> ProposalOut:
    """A proposal as kept (ProposalOut's JSON, ProposalWriter's), read back through the schema."""
    return ProposalOut.model_validate_json(body)


def _ticket_out(ticket_id: str, ticket: TicketState, estimate: float | None = None) -> TicketOut:
    match = _proposal(ticket.match) if ticket.match else None
    return TicketOut.model_validate(
        {"ticket_id": ticket_id, "status": ticket.status, "match": match, "estimated_wait_s": estimate}
    )


async def requeue(
    session: AsyncSession, redis: RedisClient, mode: str, proposal_id: str, body: RequeueIn
) -> RequeueOut:
    """Undo a proposal at once: the listed tickets are cancelled, the others queue again with
    their original enqueue time. 409 if it was requeued before."""
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    found = await store.proposal(proposal_id)
    if found is None:
        raise NotFound(f"no proposal {proposal_id!r} in {mode!r}")
    ticket_ids = ProposalOut.model_validate_json(found).ticket_ids
    strangers = sorted(set(body.cancel) - set(ticket_ids))
    if strangers:
        message = f"ticket {strangers[0]!r} is not in proposal {proposal_id!r}"
        raise ValidationFailed(message, errors=[{"loc": ["body", "cancel"], "msg": message}])
    outcome = await store.requeue(proposal_id, ticket_ids, body.cancel, time.time(), rules.ticket_ttl)
    if outcome is None:
        raise Conflict(f"proposal {proposal_id!r} was already requeued")
    return RequeueOut(
        proposal_id=proposal_id,
        tickets=[
            RequeuedTicket.model_validate({"ticket_id": ticket_id, "status": status})
            for ticket_id, status in zip(ticket_ids, outcome, strict=True)
        ],
    )


async def get_proposal(
    session: AsyncSession, redis: RedisClient, mode: str, proposal_id: str
) -> ProposalDetail:
    """A proposal with its players' answers so far (an overdue ready check fails first)."""
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    proposal = await _find_proposal(store, mode, proposal_id)
    if _overdue(proposal, time.time()):
        await store.sweep_deadlines(time.time(), rules.ticket_ttl)
        proposal = await _find_proposal(store, mode, proposal_id)
    return _detail(proposal, await store.answers(proposal_id))


async def answer_proposal(
    session: AsyncSession, redis: RedisClient, mode: str, proposal_id: str, body: AnswerIn, answer: str
) -> ProposalDetail:
    """Accept or decline a proposal for the listed players (SETTLE: a decline fails it at once,
    the last acceptance accepts it). The same answer again is 200; an answer that differs from
    the one a settled proposal holds is a 409."""
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    proposal = await _find_proposal(store, mode, proposal_id)
    members = {player for team in proposal.teams for player in team}
    for position, player in enumerate(body.players):
        if player not in members:
            message = f"player {player!r} is not in proposal {proposal_id!r}"
            raise ValidationFailed(message, errors=[{"loc": ["body", "players", position], "msg": message}])
    now = time.time()
    if rules.accept_timeout is not None:
        await store.sweep_deadlines(now, rules.ticket_ttl)  # a late answer meets a failed proposal
    settled = await store.settle(
        proposal_id, proposal.ticket_ids, answer, body.players, now, rules.ticket_ttl
    )
    if settled is None:
        raise NotFound(f"no proposal {proposal_id!r} in {mode!r}")
    if settled.conflict is not None:
        player = settled.conflict
        # Without a ready check (no deadline) every player accepted as the proposal formed.
        given = settled.answers.get(player) or ("accepted" if proposal.deadline is None else None)
        said = f"{given} it" if given else "had not answered"
        raise Conflict(f"proposal {proposal_id!r} has settled ({settled.state}): player {player!r} {said}")
    return _detail(proposal.model_copy(update={"state": settled.state}), settled.answers)


async def _find_proposal(store: QueueStore, mode: str, proposal_id: str) -> ProposalOut:
    found = await store.proposal(proposal_id)
    if found is None:
        raise NotFound(f"no proposal {proposal_id!r} in {mode!r}")
    return _proposal(found)


def _detail(proposal: ProposalOut, answers: dict[str, str]) -> ProposalDetail:
    return ProposalDetail.model_validate(
        {
            **proposal.model_dump(),
            "answers": {player: answers.get(player) for team in proposal.teams for player in team},
        }
    )


async def sweep_deadlines(session: AsyncSession, redis: RedisClient, every_mode: bool = True) -> int:
    """Fail the overdue ready checks of the modes that run one, or with `every_mode` of every
    mode (a check turned off leaves its pending proposals to this). Each instance's background
    task calls this, so a deadline passes with no client call, whichever instance formed the
    proposal. How many proposals failed."""
    now = time.time()
    listed = [
        mode
        for mode in await modes.list_modes(session)
        if every_mode or (mode.settings or {}).get("accept_timeout_s") is not None
    ]
    names = [mode.name for mode in listed]
    if not names:
        return 0
    due: list[Any]
    try:
        async with redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.zrangebyscore(QueueStore(redis, name).keys.deadlines, "-inf", now, start=0, num=1)
            due = await pipe.execute(raise_on_error=False)
    except UNAVAILABLE:
        # A cluster pipeline fails whole when one of its nodes is out of reach: then each mode
        # is read alone, so that a master that is down holds back its own modes only.
        due = await asyncio.gather(
            *(
                redis.zrangebyscore(QueueStore(redis, name).keys.deadlines, "-inf", now, start=0, num=1)
                for name in names
            ),
            return_exceptions=True,
        )
    failed = 0
    for mode, overdue in zip(listed, due, strict=True):
        if overdue and not isinstance(overdue, BaseException):
            failed += await QueueStore(redis, mode.name).sweep_deadlines(now, modes.rules_of(mode).ticket_ttl)
    return failed


async def cancel_ticket(session: AsyncSession, redis: RedisClient, mode: str, ticket_id: str) -> None:
    rules = await modes.resolve(session, mode)
    outcome = await QueueStore(redis, mode).cancel(ticket_id, rules.ticket_ttl)
    if outcome == -1:
        raise NotFound(f"no ticket {ticket_id!r} in {mode!r}")
    if outcome == 2:
        raise Conflict(f"ticket {ticket_id!r} is already matched")


async def matchmake(session: AsyncSession, redis: RedisClient, mode: str, max_matches: int) -> bytes:
    """Up to max_matches proposals, each claimed atomically: the backfills' fills, then new
    matches, best first, up to the bound the fills left. The response's JSON."""
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    now = time.time()
    if rules.accept_timeout is not None:
        await store.sweep_deadlines(now, rules.ticket_ttl)
    waiting = await store.waiting(now, rules.ticket_ttl)
    # Under a ready check every proposal of the call is pending until the same deadline.
    deadline = None if rules.accept_timeout is None else time.time() + rules.accept_timeout
    state: ProposalState = "accepted" if deadline is None else "pending"
    # Backfills first (Open Match 2's guidance): their tickets are out of this call's matches.
    served = await backfills.serve(redis, mode, rules, waiting, now, state, deadline, max_matches)
    pool = waiting.pool
    if served.tried:
        # Each ticket a fill tried alone in a group of its own: no match can take it.
        group = pool.group.copy()
        group[served.tried] = OUT_OF_REACH - np.asarray(served.tried, dtype=np.int64)
        pool = dataclasses.replace(pool, group=group)
    # The fills count against the call's bound.
    room = max_matches - len(served.proposals)
    matches = []
    if room > 0:
        # Pure CPU work: off the event loop, so other requests' I/O keeps flowing meanwhile.
        matches = await asyncio.to_thread(
            form_matches, pool, rules.shape, rules.env.beta, rules.relax, room, rules.latency
        )
    claims = [
        ProposalClaim(match.teams, match.quality, match.longest_wait, match.region, match.roles)
        for match in matches
    ]
    claimed_at = time.time()
    render = ProposalWriter(state, deadline)
    # Another caller may have taken some of these tickets since we read: those are skipped,
    # as is a match whose tickets' attributes differ (two attribute digests that collide).
    won = await store.claim(waiting, claims, claimed_at, rules.ticket_ttl, render, deadline)
    qualities = served.qualities + [matches[index].quality for index, _ in won]
    metrics.observe_all(metrics.MATCH_QUALITY.labels(mode), qualities)
    metrics.BACKFILL_FILLS.labels(mode).inc(len(served.proposals))
    metrics.observe_all(metrics.BACKFILL_FILL_QUALITY.labels(mode), served.qualities)
    rows = served.rows + [row for index, _ in won for row in matches[index].rows]
    waited = claimed_at - now + waiting.pool.waited[rows]
    metrics.observe_all(metrics.QUEUE_WAIT.labels(mode), waited)
    try:
        await _count(redis, mode, rules.env.beta, waiting, rows, qualities, waited, (now, claimed_at))
    except Exception as exc:
        # The proposals are claimed: their tickets are matched whatever the statistics do, and
        # only this answer tells the lobby service. Statistics are not bookkeeping: a call they
        # miss (Redis busy, a replica late) shows as a gap in them, never as a lost match.
        log.warning("queue %s: a matchmaking call was not counted in the statistics: %r", mode, exc)
    made = served.proposals + render.claimed(won)
    return to_json(MatchmakeOut.model_construct(matches=made))


async def _count(
    redis: RedisClient,
    mode: str,
    beta: float,
    waiting: Waiting,
    rows: list[int],
    qualities: list[float],
    waited: FloatArray,
    times: tuple[float, float],
) -> None:
    """Count a matchmaking call for the statistics (statistics.py): its matches, the waits of
    their tickets by class, and the tickets left waiting; and rebuild the wait estimates when
    they are due."""
    statistics = QueueStatistics(redis, mode)
    pool = waiting.pool
    regions = pool_regions(pool, waiting.values)
    names, codes = regions
    bands = waits.skill_bands(pool.mu[rows], pool.size[rows], beta).tolist()
    uncertain = waits.uncertainty_bands(pool.var[rows], pool.size[rows], beta).tolist()
    classes = [
        waits.ticket_class(band, uncertainty, names[code])
        for band, uncertainty, code in zip(bands, uncertain, codes[rows].tolist(), strict=True)
    ]
    started, now = times
    left = np.ones(len(pool), dtype=np.bool_)
    left[rows] = False
    await statistics.count_waiting(pool, regions, left, now)
    # The call's delay as a ticket sees it: to its answer (near enough: the counting below is
    # one more round trip), not only to the claim.
    interval = await statistics.pulse(started, time.time())
    calls = waits.calls_waited(pool.waited[rows], interval).tolist()
    await statistics.record(now, qualities, waited, classes, calls)
    if now - _estimated_at.get(mode, 0.0) >= ESTIMATE_REFRESH_S:
        _estimated_at[mode] = now
        await statistics.refresh_estimates(now, beta)


async def queue_statistics(session: AsyncSession, redis: RedisClient, mode: str) -> bytes:
    """The JSON of QueueStatisticsOut: who waits, by region, and its recent matches' waits and
    qualities over the last 1, 5 and 15 minutes. The waiting counts are those of the latest
    matchmaking call, as old as `counted_at` says. A read walks the pool only when no call
    counted it within the counts' lifetime (KEEP_S: no matchmaking loop runs), and its count
    then serves the reads after it: at 100,000 tickets a walk takes most of a second, which
    every read behind it on the process would wait for."""
    rules = await modes.resolve(session, mode)
    statistics = QueueStatistics(redis, mode)
    now = time.time()
    counted, windows = await statistics.read(now)
    if counted is None:
        waiting = await QueueStore(redis, mode).waiting(now, rules.ticket_ttl)
        left = np.ones(len(waiting.pool), dtype=np.bool_)
        counted = await statistics.count_waiting(
            waiting.pool, pool_regions(waiting.pool, waiting.values), left, now
        )
    regions = sorted(counted.by_region.items(), key=lambda item: (item[0] is None, item[0] or ""))
    return to_json(
        QueueStatisticsOut.model_construct(
            tickets=sum(t for t, _ in counted.by_region.values()),
            players=sum(p for _, p in counted.by_region.values()),
            counted_at=dt.datetime.fromtimestamp(counted.counted_at, dt.UTC),
            regions=[RegionWaiting(region=name, tickets=t, players=p) for name, (t, p) in regions],
            windows=[
                WindowStats(
                    minutes=window.minutes,
                    matches=window.matches,
                    tickets_matched=window.tickets,
                    wait_p50_s=waits.percentile(window.waits, 0.5, wait=True),
                    wait_p90_s=waits.percentile(window.waits, 0.9, wait=True),
                    wait_p99_s=waits.percentile(window.waits, 0.99, wait=True),
                    quality_p10=waits.percentile(window.qualities, 0.1, wait=False),
                    quality_p50=waits.percentile(window.qualities, 0.5, wait=False),
                    quality_p90=waits.percentile(window.qualities, 0.9, wait=False),
                )
                for window in windows
            ],
        )
    )


async def stats(session: AsyncSession, redis: RedisClient, mode: str) -> QueueStats:
    rules = await modes.resolve(session, mode)
    tickets, player_count, oldest = await QueueStore(redis, mode).stats(time.time(), rules.ticket_ttl)
    return QueueStats(tickets=tickets, players=player_count, oldest_wait_s=oldest)


async def refresh_depth_gauges(session: AsyncSession, redis: RedisClient) -> None:
    """Set the queue gauges of every mode from Redis (called when /metrics is scraped)."""
    now = time.time()
    for mode in await modes.list_modes(session):
        rules = modes.rules_of(mode)
        tickets, _, oldest = await QueueStore(redis, mode.name).stats(now, rules.ticket_ttl)
        metrics.QUEUE_TICKETS.labels(mode.name).set(tickets)
        metrics.QUEUE_OLDEST_WAIT.labels(mode.name).set(oldest)
        live, open_slots = await backfills.count_backfills(redis, mode.name, rules.shape.team_size, now)
        metrics.QUEUE_BACKFILLS.labels(mode.name).set(live)
        metrics.QUEUE_BACKFILL_OPEN_SLOTS.labels(mode.name).set(open_slots)
