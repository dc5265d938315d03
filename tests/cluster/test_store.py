"""The queue's store, scripts and long-poll subscription on a real Redis Cluster, in process."""

from __future__ import annotations

import asyncio
import json
import secrets
import time

from app.config import Settings
from app.infra.redis_client import build_redis
from app.queues.store import NewTicket, ProposalClaim, QueueStore, new_ids
from app.queues.watch import TicketWatch
from tests.queues.helpers import render, render_pending
from tests.redis_cluster import Cluster


def _ticket(n: int) -> NewTicket:
    return NewTicket(new_ids(1, time.time())[0], [f"p{n}"], [(25.0, 8.0)], "{}")


async def test_every_queue_script_runs_on_its_modes_slot_and_events_reach_a_subscriber(
    cluster: Cluster,
) -> None:
    redis = build_redis(Settings(redis_url=cluster.url), cluster.url)
    watch = TicketWatch(redis)
    watch.start()
    try:
        assert await watch.subscribed(10.0)
        # Modes on every master: each script touches several keys of its mode (pool, holders,
        # done hashes), which a cluster refuses (CROSSSLOT) unless they share one slot.
        modes: dict[int, str] = {}
        while len(modes) < len(cluster.masters()):
            mode = f"s-{secrets.token_hex(3)}"
            modes.setdefault(cluster.owner(QueueStore(redis, mode).keys.pool), mode)
        for mode in modes.values():
            store = QueueStore(redis, mode)
            now = time.time()
            tickets = [_ticket(n) for n in range(4)]
            # One with an extension (extension.py): the enqueue script also writes its done hash.
            tickets[1] = tickets[1]._replace(roles=[["tank"]], avoid=["p2"])
            assert await store.enqueue(tickets, now, 60.0) == [0, 0, 0, 0]
            waiting = await store.waiting(now, 60.0)
            assert waiting.pool.roles is not None and waiting.pool.clashes is not None
            assert len(set(waiting.pool.group.tolist())) == 1  # its true group read back
            first, second = (
                waiting.pool.ids.index(tickets[0].ticket_id),
                waiting.pool.ids.index(tickets[1].ticket_id),
            )
            with watch.watching(tickets[0].ticket_id) as woken:
                claimed = await store.claim(
                    waiting, [ProposalClaim([[first], [second]], 0.5, 0.0)], now, 60.0, render
                )
                assert [index for index, _ in claimed] == [0]
                state = await asyncio.wait_for(woken, 10.0)
            assert state is not None and state.status == "matched" and state.match is not None
            proposal = json.loads(state.match)["proposal_id"]
            assert proposal == claimed[0][1]
            assert await store.requeue(proposal, [t.ticket_id for t in tickets[:2]], [], now, 60.0) == [
                "queued",
                "queued",
            ]
            assert await store.cancel(tickets[2].ticket_id, 60.0) == 1
            expired = await store.waiting(now + 61.0, 60.0)  # sweeps the rest out as expired
            assert len(expired.pool) == 0
            assert (await store.ticket(tickets[3].ticket_id, now + 61.0)).status == "expired"  # type: ignore[union-attr]
            assert (await store.ticket(tickets[2].ticket_id, now)).status == "cancelled"  # type: ignore[union-attr]
        assert len({cluster.owner(QueueStore(redis, m).keys.pool) for m in modes.values()}) == 3
    finally:
        await watch.stop()
        await redis.aclose()


async def test_ready_checks_settle_on_each_modes_slot_and_wake_subscribers(cluster: Cluster) -> None:
    redis = build_redis(Settings(redis_url=cluster.url), cluster.url)
    watch = TicketWatch(redis)
    watch.start()
    try:
        assert await watch.subscribed(10.0)
        modes: dict[int, str] = {}
        while len(modes) < len(cluster.masters()):
            mode = f"r-{secrets.token_hex(3)}"
            modes.setdefault(cluster.owner(QueueStore(redis, mode).keys.pool), mode)
        for mode in modes.values():
            store = QueueStore(redis, mode)
            now = time.time()
            tickets = [_ticket(n) for n in range(6)]
            assert await store.enqueue(tickets, now, 60.0) == [0] * 6
            waiting = await store.waiting(now, 60.0)
            row = {ticket_id: n for n, ticket_id in enumerate(waiting.pool.ids)}
            claims = [
                ProposalClaim([[row[tickets[a].ticket_id]], [row[tickets[a + 1].ticket_id]]], 0.5, 0.0)
                for a in (0, 2, 4)
            ]
            made = await store.claim(waiting, claims, now, 60.0, render_pending, deadline=now + 5.0)
            assert len(made) == 3
            (_, accepted), (_, declined), (_, expired) = made
            ids = [t.ticket_id for t in tickets]
            assert (
                await store.settle(accepted, ids[0:2], "accepted", ["p0", "p1"], now, 60.0)
            ).state == "accepted"  # type: ignore[union-attr]
            with watch.watching(ids[2]) as woken:
                await store.settle(declined, ids[2:4], "accepted", ["p2"], now, 60.0)
                settled = await store.settle(declined, ids[2:4], "declined", ["p3"], now, 60.0)
                assert settled is not None and settled.state == "failed"
                assert await asyncio.wait_for(woken, 10.0) is None  # requeued: no status, read again
            assert (await store.ticket(ids[2], now)).status == "queued"  # type: ignore[union-attr]
            assert (await store.ticket(ids[3], now)).status == "cancelled"  # type: ignore[union-attr]
            assert await store.sweep_deadlines(now + 6.0, 60.0) == 1
            assert {(await store.ticket(t, now)).status for t in ids[4:]} == {"cancelled"}  # type: ignore[union-attr]
            assert json.loads(await store.proposal(expired) or "{}")["state"] == "failed"
            assert await redis.zcard(store.keys.deadlines) == 0
    finally:
        await watch.stop()
        await redis.aclose()
