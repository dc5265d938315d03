"""A real Redis Cluster (tests/redis_cluster.py) per module: the failover test kills a master."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.redis_cluster import Cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = Cluster(tmp_path_factory.mktemp("redis-cluster")).start()
    yield running
    running.stop()
