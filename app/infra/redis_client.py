"""The one place that builds Redis clients from REDIS_URL: a single server or a Redis Cluster.

REDIS_URL=redis://…, rediss://… or unix://… gives redis-py's asyncio `Redis`;
redis+cluster://h1:p1,h2:p2 (rediss+cluster:// with TLS) gives its `RedisCluster`, which
discovers the whole cluster from any seed, follows MOVED/ASK and refreshes its slot map after
a failover. The queue's keys carry the hash tag {mode} (app/queues/store.py), so every script
and multi-key command of a mode lands on one slot; the rest of the service speaks to Redis
only through the queue.

Packing with hiredis (app/infra/redis_packing.py) applies to the single-server client only:
RedisCluster builds each node's connections itself from a fixed connection class, with no
public hook to swap it, and patching the nodes it discovers at run time would be touching
more internals than the packing saves.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from redis import Redis as SyncRedis
from redis import RedisCluster as SyncRedisCluster
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode as SyncClusterNode
from redis.exceptions import RedisClusterException, RedisError

from app.config import ClusterUrl, Settings, cluster_url
from app.infra.redis_packing import pack_with_hiredis

# What the queue, long-polls and metrics take: either client answers the same commands.
RedisClient: TypeAlias = Redis | RedisCluster

# What a Redis outage raises: redis-py's errors (ConnectionError, TimeoutError, and on a cluster
# ClusterDownError, TryAgainError, MovedError past its redirections), plus the cluster client's
# RedisClusterException, which is no RedisError: SlotNotCoveredError while a failed master's
# slots have no owner yet, "cannot be connected" while no seed answers.
UNAVAILABLE: tuple[type[Exception], ...] = (RedisError, RedisClusterException, OSError)


def closed_under_command(exc: BaseException) -> bool:
    """Whether `exc` is a command's connection closed under it by redis-py itself: the cluster
    client closes every connection of a node it drops from its slot map (a failed master),
    those in use by other commands included, and such a command then fails inside redis-py's
    connection code rather than with ConnectionError (redis-py 8.1): AttributeError ('NoneType'
    object has no attribute 'writelines') once the writer is gone, or, under uvloop, the
    transport's RuntimeError ('unable to perform operation on <TCPTransport closed=True ...>;
    the handler is closed') while redis-py writes on it. Told apart from our own bugs by where
    it was raised: under redis-py's frames."""
    if not isinstance(exc, AttributeError | RuntimeError):
        return False
    frame = exc.__traceback__
    last_redis = None
    while frame is not None:
        if str(frame.tb_frame.f_globals.get("__name__", "")).startswith("redis."):
            last_redis = frame
        frame = frame.tb_next
    if last_redis is None:
        return False
    # AttributeError: raised by redis-py's own frame; RuntimeError: by the transport under it.
    return isinstance(exc, RuntimeError) or last_redis.tb_next is None


def _options(timeout: float, cluster: ClusterUrl | None) -> dict[str, Any]:
    """The connection options every client here shares, the service's and the CLI's ping."""
    options: dict[str, Any] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if cluster is not None:
        options.update(
            ssl=cluster.tls,
            username=cluster.username,
            password=cluster.password,
            # With cluster-require-full-coverage no (docs/operations.md), the slots of a master that is down
            # fail alone: the client must not refuse the whole cluster for them.
            require_full_coverage=False,
            # No retry inside the client: redis-py 8.1's cluster pipeline, before each retry,
            # closes the connections to every node, those of commands in flight to healthy
            # masters included, so a master that stays down would fail the other masters'
            # modes too (tests/cluster/test_service.py holds such an outage). A command that
            # fails is answered 503 with Retry-After (its mode only); the client re-reads the
            # slot map before its next command, and the caller's retry reaches the new master.
            retry=Retry(NoBackoff(), 0),
        )
    return options


def build_redis(settings: Settings, url: str) -> RedisClient:
    """The service's client for `url`."""
    cluster = cluster_url(url)
    options = _options(settings.redis_timeout_s, cluster)
    if cluster is None:
        return pack_with_hiredis(Redis.from_url(url, health_check_interval=30, **options))
    nodes = [ClusterNode(host, port) for host, port in cluster.seeds]
    return RedisCluster(startup_nodes=nodes, health_check_interval=30, **options)


def ping(url: str, timeout: float) -> None:
    """PING the server (or one node of the cluster) with a blocking client; raises RedisError
    or OSError when it does not answer (the CLI's wait for Redis at start)."""
    cluster = cluster_url(url)
    options = _options(timeout, cluster)
    if cluster is None:
        with SyncRedis.from_url(url, **options) as client:
            client.ping()
        return
    nodes = [SyncClusterNode(host, port) for host, port in cluster.seeds]  # type: ignore[no-untyped-call]
    client = SyncRedisCluster(startup_nodes=nodes, **options)
    try:
        client.ping(target_nodes=SyncRedisCluster.RANDOM)
    finally:
        client.close()
