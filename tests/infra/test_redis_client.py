"""The Redis client factory: one server or a cluster from REDIS_URL, and how an outage reads."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection

from app.config import Settings
from app.infra.redis_client import build_redis, closed_under_command


async def test_the_url_picks_the_client() -> None:
    settings = Settings()
    single = build_redis(settings, "redis://127.0.0.1:1/0")
    cluster = build_redis(settings, "rediss+cluster://127.0.0.1:1,127.0.0.1:2")
    try:
        assert type(single) is Redis
        assert isinstance(cluster, RedisCluster)
        assert [(node.host, node.port) for node in cluster.nodes_manager.startup_nodes.values()] == [
            ("127.0.0.1", 1),
            ("127.0.0.1", 2),
        ]
    finally:
        await single.aclose()
        await cluster.aclose()


async def test_a_connection_closed_under_a_command_reads_as_an_outage_and_our_bugs_do_not() -> None:
    """What the cluster client raises when it closes a connection a command is writing on
    (redis-py 8.1); if redis-py changes how that fails, this says so."""
    with pytest.raises(AttributeError) as closed:
        await Connection()._send_packed_command([b"PING"])
    assert closed_under_command(closed.value)
    with pytest.raises(AttributeError) as ours:
        None.writelines  # type: ignore[attr-defined]  # noqa: B018
    assert not closed_under_command(ours.value)
    assert not closed_under_command(ConnectionError("not an AttributeError"))


def test_a_transport_closed_under_redis_pys_write_reads_as_an_outage(redis_url: str) -> None:
    """Under uvloop, a write on a transport the cluster client closed fails with the
    transport's RuntimeError inside redis-py's send; a RuntimeError of ours does not count."""
    import asyncio

    import uvloop

    async def closed_transport_write() -> BaseException:
        client = Redis.from_url(redis_url)
        connection = await client.connection_pool.get_connection()
        try:
            assert connection._writer is not None
            connection._writer.transport.close()
            await asyncio.sleep(0)
            await connection._send_packed_command([b"PING\r\n"])
        except BaseException as exc:
            return exc
        finally:
            await client.aclose()
        raise AssertionError("the write on a closed transport did not fail")

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        failed = runner.run(closed_transport_write())
    assert isinstance(failed, RuntimeError), repr(failed)
    assert closed_under_command(failed)
    assert not closed_under_command(RuntimeError("ours"))
