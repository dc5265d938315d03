"""The queue's Redis layout on real Redis: what queueing a ticket writes, read back exactly."""

from __future__ import annotations

import json
import random
import time

import numpy as np
from redis.asyncio import Redis

from app.queues.store import HEADER_BYTES, NewTicket, QueueStore


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
        pool = await store.pool(now + 1.0, 60.0)
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
            attributes, players = value[HEADER_BYTES + 16 * size :].decode().split("\n")
            assert (attributes, json.loads(players)) == (ticket.attributes, ticket.players)
        groups = {ticket.attributes: pool.group[row[ticket.ticket_id]] for ticket in tickets}
        assert len(set(groups.values())) == 2
    finally:
        await redis.aclose()
