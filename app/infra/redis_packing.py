"""redis-py's asyncio connections, packing commands with hiredis.

redis-py's asyncio client packs every command's arguments one by one in Python, and claiming
a thousand matches sends over three thousand keys (docs/benchmarks.md, "Matchmaking queue").
hiredis.pack_command writes the same bytes in C. Anything it refuses (a bool, say) goes to
redis-py's own packing, which raises redis-py's usual error.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection


class _HiredisPacking:
    """Mixed in before a redis-py connection class, so only pack_command changes (the socket
    and everything else stay the connection class's own)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        # Like redis-py: a command given with its subcommand ("CONFIG GET") is split.
        first = args[0]
        if (isinstance(first, str) and " " in first) or (isinstance(first, bytes) and b" " in first):
            args = (*first.split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:
            packed: list[bytes] = super().pack_command(*args)  # type: ignore[misc]
            return packed


class HiredisConnection(_HiredisPacking, Connection):
    """A TCP connection."""


class HiredisUnixConnection(_HiredisPacking, UnixDomainSocketConnection):
    """A Unix socket connection."""


def pack_with_hiredis(redis: Redis) -> Redis:
    """Have the client's new connections pack with hiredis (TCP and Unix sockets; TLS
    connections keep redis-py's packing)."""
    pool = redis.connection_pool
    swap: dict[type, type] = {
        Connection: HiredisConnection,
        UnixDomainSocketConnection: HiredisUnixConnection,
    }
    pool.connection_class = swap.get(pool.connection_class, pool.connection_class)
    return redis
