"""Commands packed by hiredis are byte for byte what redis-py would send."""

from __future__ import annotations

import secrets

import pytest
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import DataError

from app.config import Settings
from app.infra.redis_client import build_redis
from app.infra.redis_packing import HiredisConnection, HiredisUnixConnection, pack_with_hiredis


@pytest.mark.parametrize(
    "command",
    [
        ("SET", "key", 1.5),
        ("SET", "key", 0.1, "EX", 86400),
        (
            "EVALSHA",
            "a" * 40,
            3,
            "mm:{q}:pool",
            "mm:{q}:holders",
            "é",
            b"\x00\xff" * 40,
            12345678901234567890,
        ),
        ("CONFIG GET", "save"),
        (b"CONFIG GET", b"save"),
        ("HGETALL", "mm:{q}:pool"),
    ],
)
def test_hiredis_packs_the_same_bytes(command: tuple[object, ...]) -> None:
    ours = b"".join(HiredisConnection().pack_command(*command))
    theirs = b"".join(Connection().pack_command(*command))
    assert ours == theirs


def test_what_hiredis_refuses_fails_as_redis_py_does() -> None:
    with pytest.raises(DataError, match="bool"):
        HiredisConnection().pack_command("SET", "key", True)


def test_clients_get_the_hiredis_connections() -> None:
    tcp = pack_with_hiredis(Redis.from_url("redis://127.0.0.1:1/0"))
    unix = pack_with_hiredis(Redis.from_url("unix:///tmp/none.sock"))
    assert tcp.connection_pool.connection_class is HiredisConnection
    assert unix.connection_pool.connection_class is HiredisUnixConnection
    assert issubclass(HiredisUnixConnection, UnixDomainSocketConnection)


async def test_the_service_client_talks_to_the_server_it_was_given(
    redis_url: str, settings: Settings
) -> None:
    """The swapped connection class keeps its own socket: a Unix URL reaches that socket (a
    mixin ordered wrongly once sent every command to localhost:6379 instead)."""
    service = build_redis(settings, redis_url)
    plain = Redis.from_url(redis_url)
    key = f"packing-{secrets.token_hex(8)}"
    try:
        await service.set(key, "here", ex=60)
        assert await plain.get(key) == b"here"
        connection = await service.connection_pool.get_connection()
        assert isinstance(
            connection, HiredisUnixConnection if redis_url.startswith("unix") else HiredisConnection
        )
        await service.connection_pool.release(connection)
    finally:
        await service.aclose()
        await plain.aclose()
