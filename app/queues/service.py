"""Matchmaking queue use cases: tickets in, best-quality matches out, never a ticket twice."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
import uuid

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession

from app import metrics
from app.errors import Conflict, NotFound, ValidationFailed
from app.matchmaking.proposals import Ticket, canonical_attributes, propose
from app.modes import service as modes
from app.players import repository as players
from app.queues.schemas import MatchmakeOut, ProposalOut, QueueStats, TicketCreated, TicketIn, TicketOut
from app.queues.store import QueueStore
from app.rating import Rating


async def create_ticket(session: AsyncSession, redis: Redis, mode: str, body: TicketIn) -> TicketCreated:
    rules = await modes.resolve(session, mode)
    if len(set(body.players)) != len(body.players):
        raise ValidationFailed(
            "a player appears twice in the ticket",
            errors=[{"loc": ["body", "players"], "msg": "a player appears twice"}],
        )
    if len(body.players) > rules.team_size:
        message = f"a party of {len(body.players)} does not fit teams of {rules.team_size}"
        raise ValidationFailed(message, errors=[{"loc": ["body", "players"], "msg": message}])
    known = await players.current_ratings(session, mode, body.players)
    prior = (rules.env.mu, rules.env.sigma)
    ratings = [known.get(p, prior) for p in body.players]
    ticket_id = uuid.uuid4().hex
    now = time.time()
    store = QueueStore(redis, mode)
    holder = await store.enqueue(
        ticket_id, body.players, ratings, canonical_attributes(body.attributes), now, rules.ticket_ttl
    )
    if holder:
        raise Conflict(f"player {body.players[holder - 1]!r} already holds an active ticket in {mode!r}")
    return TicketCreated(
        ticket_id=ticket_id, status="queued", created_at=dt.datetime.fromtimestamp(now, dt.UTC)
    )


async def get_ticket(redis: Redis, mode: str, ticket_id: str) -> TicketOut:
    raw = await QueueStore(redis, mode).ticket(ticket_id)
    if raw is None:
        raise NotFound(f"no ticket {ticket_id!r} in {mode!r}")
    status = raw["status"]
    if status == "queued" and float(raw["expires_at"]) <= time.time():
        status = "expired"
    match = ProposalOut.model_validate_json(raw["match"]) if raw.get("match") else None
    return TicketOut.model_validate({"ticket_id": ticket_id, "status": status, "match": match})


async def cancel_ticket(redis: Redis, mode: str, ticket_id: str) -> None:
    store = QueueStore(redis, mode)
    raw = await store.ticket(ticket_id)
    if raw is None:
        raise NotFound(f"no ticket {ticket_id!r} in {mode!r}")
    outcome = await store.cancel(ticket_id, json.loads(raw["players"]))
    if outcome == 2:
        raise Conflict(f"ticket {ticket_id!r} is already matched")


async def matchmake(session: AsyncSession, redis: Redis, mode: str, max_matches: int) -> MatchmakeOut:
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    now = time.time()
    await store.expire(now, rules.ticket_ttl)
    waiting = await store.waiting()
    tickets = [
        Ticket(
            ticket_id,
            tuple(entry[0]),
            tuple(Rating(mu, sigma) for mu, sigma in entry[1]),
            entry[2],
            now - entry[3],
        )
        for ticket_id, entry in waiting.items()
        if now - entry[3] < rules.ticket_ttl
    ]
    enqueued_at = {ticket_id: entry[3] for ticket_id, entry in waiting.items()}
    # Pure CPU work: off the event loop, so other requests' I/O keeps flowing meanwhile.
    proposals = await asyncio.to_thread(
        propose, tickets, rules.teams, rules.team_size, rules.env, rules.relax, max_matches
    )
    claimed: list[ProposalOut] = []
    for proposal in proposals:
        out = ProposalOut(
            proposal_id=uuid.uuid4().hex,
            teams=[list(t) for t in proposal.teams],
            ticket_ids=list(proposal.ticket_ids),
            quality=proposal.quality,
            longest_wait_s=proposal.longest_wait,
        )
        members = [p for team in proposal.teams for p in team]
        # Another caller may have taken one of these tickets since we read: then skip it.
        claimed_at = time.time()
        if await store.claim(list(proposal.ticket_ids), members, out.model_dump_json(), claimed_at):
            claimed.append(out)
            metrics.MATCH_QUALITY.labels(mode).observe(proposal.quality)
            for ticket_id in proposal.ticket_ids:
                metrics.QUEUE_WAIT.labels(mode).observe(claimed_at - enqueued_at[ticket_id])
    return MatchmakeOut(matches=claimed)


async def stats(session: AsyncSession, redis: Redis, mode: str) -> QueueStats:
    rules = await modes.resolve(session, mode)
    store = QueueStore(redis, mode)
    now = time.time()
    await store.expire(now, rules.ticket_ttl)
    tickets, player_count, oldest = await store.stats(now)
    return QueueStats(tickets=tickets, players=player_count, oldest_wait_s=oldest)


async def refresh_depth_gauges(session: AsyncSession, redis: Redis) -> None:
    """Set the queue gauges of every mode from Redis (called when /metrics is scraped)."""
    now = time.time()
    for mode in await modes.list_modes(session):
        rules = modes.rules_of(mode)
        tickets, oldest = await QueueStore(redis, mode.name).depth(now, rules.ticket_ttl)
        metrics.QUEUE_TICKETS.labels(mode.name).set(tickets)
        metrics.QUEUE_OLDEST_WAIT.labels(mode.name).set(oldest)
