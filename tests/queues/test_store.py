"""The queue's Redis layout on real Redis: what queueing a ticket writes, read back exactly."""

from __future__ import annotations

import json
import random
import time

import numpy as np
from redis.asyncio import Redis

from app.queues.store import (
    HEADER_BYTES,
    RETENTION_SECONDS,
    NewTicket,
    ProposalClaim,
    QueueStore,
    TicketState,
    hold,
    new_ids,
)
from tests.queues.helpers import render


async def test_pool_records_and_ratings_round_trip_exactly(redis_url: str) -> None:
    rng = random.Random(11)
    tickets = [
        NewTicket(
            f"{n:032x}",
            [f"rt-{n}-{i}" for i in range(size)],
            [(rng.uniform(-50, 80), rng.uniform(0.01, 9)) for _ in range(size)],
            '{"region":"eu"}' if n % 3 else "{}",
        )
        for n, size in enumerate([1, 3, 1, 5, 2, 1, 4])
    ]
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"round-trip-{rng.getrandbits(32):08x}")
        now = time.time()
        assert await store.enqueue(tickets, now, 60.0) == [0] * len(tickets)
        pool = (await store.waiting(now + 1.0, 60.0)).pool
        row = {ticket_id: i for i, ticket_id in enumerate(pool.ids)}
        assert sorted(row) == sorted(t.ticket_id for t in tickets)
        for ticket in tickets:
            i = row[ticket.ticket_id]
            assert pool.size[i] == len(ticket.players)
            # Summed in the order Python sums them, so equal to the last bit.
            assert pool.mu[i] == sum(m for m, _ in ticket.ratings)
            assert pool.var[i] == sum(s * s for _, s in ticket.ratings)
            assert pool.waited[i] == 1.0
            # The value: the header, each player's (mu, sigma), the attributes, the players.
            value = await redis.hget(store.keys.pool, ticket.ticket_id)
            size = len(ticket.players)
            header = np.frombuffer(value[:HEADER_BYTES], dtype="<f8")
            assert header[5] == now + 60.0
            rated = np.frombuffer(value[HEADER_BYTES : HEADER_BYTES + 16 * size], dtype="<f8")
            assert rated.reshape(-1, 2).tolist() == [list(r) for r in ticket.ratings]
            attributes, regions, players = value[HEADER_BYTES + 16 * size :].decode().split("\n")
            assert (attributes, regions, json.loads(players)) == (ticket.attributes, "", ticket.players)
        groups = {ticket.attributes: pool.group[row[ticket.ticket_id]] for ticket in tickets}
        assert len(set(groups.values())) == 2
    finally:
        await redis.aclose()


async def test_a_claim_never_takes_a_ticket_whose_hold_another_ticket_took_over(redis_url: str) -> None:
    """A matchmaker read the pool while a ticket was live; by the time it claims, the ticket
    has lapsed and its player queued again. Claiming the old ticket would put the player in
    a match while the new ticket still waits, so the claim must refuse it."""
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"takeover-{random.getrandbits(32):08x}")
        start = time.time()
        old = [
            NewTicket(i, [p], [(25.0, 8.0)], "{}")
            for i, p in zip(new_ids(2, start), ["to-1", "to-2"], strict=True)
        ]
        assert await store.enqueue(old, start, 10.0) == [0, 0]
        waiting = await store.waiting(start + 1.0, 10.0)
        later = start + 11.0  # both old tickets have lapsed, unswept
        newer = NewTicket(new_ids(1, later)[0], ["to-1"], [(25.0, 8.0)], "{}")
        assert await store.enqueue([newer], later, 10.0) == [0]
        # Claimed as if at a time the old tickets were still live: only the holds can tell.
        assert (
            await store.claim(waiting, [ProposalClaim([[0], [1]], 0.5, 1.0)], start + 5.0, 10.0, render) == []
        )
        assert (await store.ticket(newer.ticket_id, later)) == TicketState("queued", None)
        assert await redis.hget(store.keys.holders, "to-1") == hold(later + 10.0, newer.ticket_id).encode()
        # The new ticket, read afresh, is claimable: its holds are its own.
        again = NewTicket(new_ids(1, later)[0], ["to-3"], [(25.0, 8.0)], "{}")
        assert await store.enqueue([again], later, 10.0) == [0]
        fresh = await store.waiting(later + 1.0, 10.0)
        rows = {ticket_id: row for row, ticket_id in enumerate(fresh.pool.ids)}
        won = await store.claim(
            fresh,
            [ProposalClaim([[rows[newer.ticket_id]], [rows[again.ticket_id]]], 0.5, 1.0)],
            later + 1.0,
            10.0,
            render,
        )
        assert [index for index, _ in won] == [0]
        assert json.loads(await store.proposal(won[0][1]) or "")["teams"] == [["to-1"], ["to-3"]]
    finally:
        await redis.aclose()


async def test_finished_tickets_read_from_the_done_hash_of_their_ids_minute(redis_url: str) -> None:
    """Statuses and proposals are one HGET each, and a done hash outlives its latest write by
    the TTL plus the retention, whatever TTL an earlier write had."""
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"done-{random.getrandbits(32):08x}")
        now = time.time()
        ids = new_ids(3, now)
        tickets = [NewTicket(i, [f"dn-{n}"], [(20.0 + n, 5.0)], "{}") for n, i in enumerate(ids)]
        assert await store.enqueue(tickets, now, 600.0) == [0, 0, 0]
        waiting = await store.waiting(now, 600.0)
        rows = {ticket_id: row for row, ticket_id in enumerate(waiting.pool.ids)}
        won = await store.claim(
            waiting, [ProposalClaim([[rows[ids[0]]], [rows[ids[1]]]], 0.5, 0.0)], now, 600.0, render
        )
        assert [index for index, _ in won] == [0]
        proposal = json.loads(await store.proposal(won[0][1]) or "")
        assert proposal["ticket_ids"] == ids[:2]
        done = store.keys.done(ids[0])
        assert (
            done
            == store.keys.done(proposal["proposal_id"])
            == f"mm:v4:{{{store.keys.mode}}}:done:{int(now) // 60}"
        )
        assert await redis.hget(done, ids[1]) == f"matched {proposal['proposal_id']}".encode()
        assert json.loads(await redis.hget(done, proposal["proposal_id"])) == proposal
        assert await store.ticket(ids[0], now) == TicketState("matched", json.dumps(proposal))
        assert 600 + RETENTION_SECONDS - 5 <= await redis.ttl(done) <= 600 + RETENTION_SECONDS
        # A later write with a shorter TTL leaves the hash's life as long as it was.
        assert await store.cancel(ids[2], 1.0) == 1
        assert await store.ticket(ids[2], now) == TicketState("cancelled", None)
        assert await redis.ttl(done) > 600 + RETENTION_SECONDS - 5
        # Ids not of the queue's making are simply unknown.
        assert await store.ticket("not-a-ticket", now) is None
        assert await store.cancel("ZZ" * 16, 1.0) == -1
    finally:
        await redis.aclose()


async def test_a_script_run_again_with_the_same_arguments_changes_nothing(redis_url: str) -> None:
    """redis-py resends a command whose connection dropped, maybe after it ran (and on a cluster
    the promoted replica may hold that first run): a ticket queued twice is queued once, and
    never put back in the pool once matched."""
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"again-{random.getrandbits(32):08x}")
        now = time.time()
        tickets = [NewTicket(i, [f"ag-{n}"], [(25.0, 8.0)], "{}") for n, i in enumerate(new_ids(2, now))]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0]
        waiting = await store.waiting(now, 60.0)
        assert sorted(waiting.pool.ids) == sorted(t.ticket_id for t in tickets)
        assert len(await store.claim(waiting, [ProposalClaim([[0], [1]], 0.5, 0.0)], now, 60.0, render)) == 1
        assert await store.enqueue(tickets, now, 60.0) == [0, 0]
        assert len((await store.waiting(now, 60.0)).pool) == 0
        assert (await store.ticket(tickets[0].ticket_id, now)).status == "matched"  # type: ignore[union-attr]
    finally:
        await redis.aclose()
