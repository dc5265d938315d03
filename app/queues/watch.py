"""Long-polls on tickets: one Redis subscription per process wakes every poll waiting here.

The queue's scripts publish the ids of the tickets that leave the pool (matched, cancelled,
expired) on the mode's events channel (store.py), whichever process ran them. Each process
holds one pattern subscription to every mode's channel, and a poll waits on a future of its
own: waiting costs neither a thread nor a Redis connection. A poll registers its future
BEFORE it reads the ticket, and only once the subscription is confirmed, so an event
published after that read always reaches it (no lost wake-up); an event before the read is
seen by the read itself. An event wakes its polls with their tickets' new states, read for
all of them at once (one match wakes hundreds of polls: two round trips, not one each).
When the subscription drops, every poll is woken to read again.

On a Redis Cluster the scripts still PUBLISH, not SPUBLISH: a cluster broadcasts a plain
PUBLISH to every node, so the one pattern subscription, on any node, hears every mode's
events, and a node that fails costs only a resubscription on another. Sharded pub/sub would
keep each event on its shard, but SSUBSCRIBE takes no pattern: each process would have to
follow every mode's channel on the node that owns its slot, and move it at each failover and
resharding. The broadcast costs each node a copy of every event (ticket ids, 32 bytes each),
small beside the scripts that publish them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator

from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster

from app.infra.redis_client import UNAVAILABLE, RedisClient, closed_under_command
from app.queues.store import EVENTS_PATTERN, QueueStore, TicketState

log = logging.getLogger(__name__)

# A ticket id's length on the channel: events are ids run together.
ID_LENGTH = 32
# After losing the subscription, wait this long before subscribing again.
RETRY_SECONDS = 0.5
# Polls read their tickets through at most this many Redis connections at once: one match
# wakes hundreds of polls, and the client's pool refuses commands beyond its size.
READERS = 32
# How long stop() waits for the listener to end before cancelling it again.
STOP_POLL_SECONDS = 0.1


class TicketWatch:
    """The process's subscription to the queues' events, and the polls waiting on it."""

    def __init__(self, redis: RedisClient) -> None:
        self._redis = redis
        self._waiters: dict[str, set[asyncio.Future[TicketState | None]]] = {}
        self._subscribed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.readers = asyncio.Semaphore(READERS)
        self._deliveries: set[asyncio.Task[None]] = set()
        self._attempts = 0

    def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="ticket-watch")

    async def stop(self) -> None:
        task = self._task
        if task is not None:
            # A cancellation that lands while the subscription is being set up can be lost
            # (seen with redis-py 8.1 on Python 3.11: 3 to 8 of every 100 quick stops,
            # tests/queues/test_watch.py): the task goes on to its next read and waits there
            # for good. So cancel until it has ended.
            try:
                while not task.done():
                    task.cancel()
                    await asyncio.wait({task}, timeout=STOP_POLL_SECONDS)
            except asyncio.CancelledError:
                task.cancel()  # stop() itself cancelled: the listener goes too
                raise
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._wake_all()

    @property
    def waiting(self) -> int:
        return sum(len(futures) for futures in self._waiters.values())

    @contextlib.contextmanager
    def watching(self, ticket_id: str) -> Iterator[asyncio.Future[TicketState | None]]:
        """A future resolved when the ticket's id is published, with its new state (None when
        that could not be read, or the subscription dropped: read it again)."""
        future: asyncio.Future[TicketState | None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(ticket_id, set()).add(future)
        try:
            yield future
        finally:
            futures = self._waiters.get(ticket_id)
            if futures is not None:
                futures.discard(future)
                if not futures:
                    del self._waiters[ticket_id]

    async def subscribed(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the subscription to be live."""
        if self._subscribed.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._subscribed.wait(), timeout)
        return self._subscribed.is_set()

    async def _listen(self) -> None:
        while True:
            pubsub: PubSub | None = None
            try:
                pubsub = await self._pubsub()
                await pubsub.psubscribe(EVENTS_PATTERN)
                # The confirmation: from here on every event published reaches us.
                while (await pubsub.get_message(timeout=5.0)) is None:
                    pass
                self._subscribed.set()
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                    if message is not None and message["type"] == "pmessage":
                        self._wake(message["channel"], message["data"])
            except Exception as exc:
                if not isinstance(exc, UNAVAILABLE) and not closed_under_command(exc):
                    raise
                log.warning("queue events subscription lost (%s); subscribing again", exc)
            finally:
                self._subscribed.clear()
                self._wake_all()
                if pubsub is not None:
                    with contextlib.suppress(*UNAVAILABLE, AttributeError):
                        await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(RETRY_SECONDS)

    async def _pubsub(self) -> PubSub:
        """A subscription on the server, or on a cluster node: each attempt after a drop tries the
        next node the client knows (masters and replicas alike all hear a PUBLISH)."""
        if not isinstance(self._redis, RedisCluster):
            return self._redis.pubsub()
        nodes = self._redis.get_nodes()
        if not nodes:  # the client learns the cluster's nodes on its first command
            await self._redis.initialize()
            nodes = self._redis.get_nodes()
        self._attempts += 1
        return self._redis.pubsub(node=nodes[self._attempts % len(nodes)])

    def _wake(self, channel: bytes, data: bytes) -> None:
        if not self._waiters:
            return
        text = data.decode("ascii", "replace")
        ids = [text[start : start + ID_LENGTH] for start in range(0, len(text), ID_LENGTH)]
        watched = [ticket_id for ticket_id in ids if ticket_id in self._waiters]
        if watched:
            # The channel is mm:v4:{mode}:events; mode names hold no braces.
            mode = channel.decode().partition("{")[2].rpartition("}")[0]
            task = asyncio.create_task(self._deliver(mode, watched))
            self._deliveries.add(task)
            task.add_done_callback(self._deliveries.discard)

    async def _deliver(self, mode: str, ticket_ids: list[str]) -> None:
        states: list[TicketState | None] = [None] * len(ticket_ids)
        try:
            async with self.readers:
                states = await QueueStore(self._redis, mode).finished(ticket_ids)
        except Exception as exc:
            if not isinstance(exc, UNAVAILABLE) and not closed_under_command(exc):
                raise
            log.warning("reading finished tickets failed (%s); their polls read again", exc)
        for ticket_id, state in zip(ticket_ids, states, strict=True):
            for future in self._waiters.get(ticket_id, ()):
                if not future.done():
                    future.set_result(state)

    def _wake_all(self) -> None:
        for futures in self._waiters.values():
            for future in futures:
                if not future.done():
                    future.set_result(None)
