"""Backfills on a real Redis Cluster, in process: their scripts run on each mode's slot (the
backfill's keys share the mode's hash tag), and a fill's claim wakes a long-poll's watch."""

from __future__ import annotations

import asyncio
import secrets
import time

from app.config import Settings
from app.infra.redis_client import build_redis
from app.matchmaking.quality import Relaxation
from app.matchmaking.shape import MatchShape
from app.modes.service import ModeRules
from app.queues import backfills
from app.queues.backfill_store import BackfillStore, PendingFill, Record
from app.queues.store import NewTicket, QueueStore, new_ids
from app.queues.watch import TicketWatch
from app.rating import TrueSkill
from tests.redis_cluster import Cluster


async def test_a_backfill_is_created_filled_checked_and_deleted_on_every_master(cluster: Cluster) -> None:
    redis = build_redis(Settings(redis_url=cluster.url), cluster.url)
    watch = TicketWatch(redis)
    watch.start()
    rules = ModeRules(
        "cluster-backfill", TrueSkill(), 3.0, shape=MatchShape(2, 2), relax=Relaxation(0.0, 0.0, 1.0)
    )
    try:
        assert await watch.subscribed(10.0)
        modes: dict[int, str] = {}
        while len(modes) < len(cluster.masters()):
            mode = f"b-{secrets.token_hex(3)}"
            modes.setdefault(cluster.owner(QueueStore(redis, mode).keys.backfills), mode)
        for mode in modes.values():
            store, queue = BackfillStore(redis, mode), QueueStore(redis, mode)
            now = time.time()
            (backfill_id,) = new_ids(1, now)
            record = Record(
                backfill_id,
                1,
                [["a1", "a2"], ["b1"]],
                [[[25.0, 3.0]] * 2, [[25.0, 3.0]]],
                "{}",
                None,
                now,
                now + 60,
            )
            await store.put(backfill_id, now, "new", record)
            (ticket_id,) = new_ids(1, now)
            assert await queue.enqueue([NewTicket(ticket_id, ["new"], [(25.0, 3.0)], "{}")], now, 60.0) == [0]
            waiting = await queue.waiting(now, 60.0)
            with watch.watching(backfill_id) as woken:
                served = await backfills.serve(redis, mode, rules, waiting, now, "accepted", None)
                await asyncio.wait_for(woken, 10.0)
            (fill,) = served.proposals
            assert (fill.backfill_id, fill.ticket_ids) == (backfill_id, [ticket_id])
            read = await store.get(backfill_id, time.time())
            assert read is not None and (read.version, read.teams) == (2, [["a1", "a2"], ["b1", "new"]])
            # The same read again claims nothing: the version moved on, the ticket is taken.
            again = await backfills.serve_records(
                redis, mode, rules, waiting, now, "accepted", None, [record]
            )
            assert again.proposals == []
            await store.put(backfill_id, time.time(), "*", None)
            assert await store.get(backfill_id, time.time()) is None
    finally:
        await watch.stop()
        await redis.aclose()


async def test_erasure_renames_a_player_on_backfills_of_every_master(cluster: Cluster) -> None:
    """The erasure's backfill script runs on each mode's slot: the roster and a pending fill
    name the pseudonym, the version moves on, the rostered entry goes, the long-poll wakes."""
    redis = build_redis(Settings(redis_url=cluster.url), cluster.url)
    watch = TicketWatch(redis)
    watch.start()
    pseudonym = "erased:" + secrets.token_hex(16)
    try:
        assert await watch.subscribed(10.0)
        modes: dict[int, str] = {}
        while len(modes) < len(cluster.masters()):
            mode = f"e-{secrets.token_hex(3)}"
            modes.setdefault(cluster.owner(QueueStore(redis, mode).keys.backfills), mode)
        for mode in modes.values():
            store, queue = BackfillStore(redis, mode), QueueStore(redis, mode)
            now = time.time()
            on_roster, filling = new_ids(2, now)
            rated = [[[25.0, 3.0]] * 2, [[25.0, 3.0]]]
            common = (rated, "{}", None, now, now + 60)
            await store.put(on_roster, now, "new", Record(on_roster, 1, [["gone", "a2"], ["b1"]], *common))
            fill = PendingFill(new_ids(1, now)[0], [[], ["gone"]], [[], [[25.0, 3.0]]])
            pending = Record(filling, 4, [["c1", "c2"], ["d1"]], *common, fills=[fill])
            await redis.hset(store.keys.backfills, filling, pending.to_json())
            with watch.watching(on_roster) as woken:
                assert await queue.erase_player("gone", pseudonym, time.time(), 60.0) >= 3
                await asyncio.wait_for(woken, 10.0)
            read = await store.get(on_roster, time.time())
            assert read is not None and (read.version, read.teams) == (2, [[pseudonym, "a2"], ["b1"]])
            read = await store.get(filling, time.time())
            assert read is not None and (read.version, read.teams) == (5, [["c1", "c2"], ["d1"]])
            assert read.fills == [PendingFill(fill.proposal_id, [[], [pseudonym]], fill.ratings)]
            assert read.created_at == now and read.ratings == rated  # numbers untouched
            assert await redis.hget(store.keys.rostered, "gone") is None
    finally:
        await watch.stop()
        await redis.aclose()
