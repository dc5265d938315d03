"""A real Redis Cluster (Debian's `redis-server`, cluster-enabled): 3 masters and 3 replicas on
free loopback ports, for the test fixtures. `redis-cli --cluster create` joins them.

The settings are those docs/operations.md's "On Redis Cluster" asks of production, with shorter
timeouts so a failover runs in seconds: cluster-require-full-coverage no (a master that is
down makes only its own slots fail), cluster-node-timeout 1000 ms.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis
from redis.cluster import RedisCluster

INSTALL_HINT = "redis-server is not installed (Debian: apt-get install redis-server; `make test` installs it)"
NODE_TIMEOUT_MS = 1000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _free_node_port() -> int:
    """A free port whose cluster bus port (port + 10000, below 65536) is free too: a node whose
    bus port was taken exits at once (it happened when several test sessions ran at a time)."""
    while True:
        port = _free_port()
        if port + 10000 >= 65536:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port


def _binary(name: str) -> str:
    found = shutil.which(name) or f"/usr/bin/{name}"
    if not Path(found).exists():
        raise AssertionError(INSTALL_HINT)
    return found


class Cluster:
    """`start()` runs and joins six nodes; `url` is the service's REDIS_URL for them;
    `kill(port)` is kill -9 of one node; `stop()` ends them all."""

    def __init__(self, workdir: Path, masters: int = 3) -> None:
        self.workdir = workdir
        self.ports: list[int] = []
        while len(self.ports) < 2 * masters:
            port = _free_node_port()
            taken = {p for q in self.ports for p in (q, q + 10000)}
            if not {port, port + 10000} & taken:
                self.ports.append(port)
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports[:2])

    def start(self) -> Cluster:
        server = _binary("redis-server")
        for port in self.ports:
            directory = self.workdir / str(port)
            directory.mkdir(parents=True, exist_ok=True)
            self.processes[port] = subprocess.Popen(
                [server, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                 "--cluster-config-file", str(directory / "nodes.conf"),
                 "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                 "--cluster-require-full-coverage", "no",
                 "--cluster-replica-validity-factor", "0",
                 "--save", "", "--appendonly", "no", "--dir", str(directory),
                 "--logfile", str(directory / "redis.log")],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
        for port in self.ports:
            self._wait_ping(port)
        subprocess.run(
            [_binary("redis-cli"), "--cluster", "create", *(f"127.0.0.1:{p}" for p in self.ports),
             "--cluster-replicas", "1", "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        self.wait_ready()
        return self

    def _wait_ping(self, port: int) -> None:
        client = redis.Redis(port=port, socket_timeout=1)
        try:
            for _ in range(200):
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    time.sleep(0.05)
            raise AssertionError(f"redis-server on {port} did not start")
        finally:
            client.close()

    def wait_ready(self, within: float = 60.0) -> None:
        """Until every live node sees all 16384 slots served and every master has its replica
        in sync (so a failover can promote it)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if all(self._node_ready(port) for port in self.live_ports()):
                return
            time.sleep(0.1)
        raise AssertionError("the cluster did not become ready")

    def _node_ready(self, port: int) -> bool:
        client = redis.Redis(port=port, socket_timeout=1, decode_responses=True)
        try:
            info = client.cluster("info")
            if info["cluster_state"] != "ok" or int(info["cluster_slots_ok"]) != 16384:
                return False
            replication = client.info("replication")
            if replication["role"] == "master":
                return int(replication["connected_slaves"]) >= 1 or not self._has_replicas(port)
            return bool(replication.get("master_link_status") == "up")
        except redis.RedisError:
            return False
        finally:
            client.close()

    def _has_replicas(self, port: int) -> bool:
        """Whether a live node still names this master its master (after a kill it has none)."""
        return any(self.master_of(other) == port for other in self.live_ports() if other != port)

    def live_ports(self) -> list[int]:
        return [port for port, process in self.processes.items() if process.poll() is None]

    def client(self) -> RedisCluster:
        return RedisCluster(host="127.0.0.1", port=self.live_ports()[0], require_full_coverage=False)

    def master_of(self, port: int) -> int | None:
        """The port of the master this node replicates; None for a master."""
        client = redis.Redis(port=port, socket_timeout=1, decode_responses=True)
        try:
            replication = client.info("replication")
            return None if replication["role"] == "master" else int(replication["master_port"])
        finally:
            client.close()

    def masters(self) -> list[int]:
        """The ports of the live masters that serve slots."""
        return sorted(port for port in self.live_ports() if self.master_of(port) is None)

    def owner(self, key: str) -> int:
        """The port of the master that serves `key`'s slot, as a live node sees it."""
        client = redis.Redis(port=self.live_ports()[0], socket_timeout=1)
        try:
            slot = int(client.cluster("keyslot", key))  # type: ignore[no-untyped-call]
            for start, end, master, *_ in client.cluster("slots"):  # type: ignore[no-untyped-call]
                if start <= slot <= end:
                    return int(master[1])
        finally:
            client.close()
        raise AssertionError(f"no node serves {key!r}")

    def hold_failover(self, replica: int, held: bool) -> None:
        """Keep this replica from taking over its master (cluster-replica-no-failover), or let it
        again: a failed master's slots then stay down for as long as a test needs."""
        client = redis.Redis(port=replica, socket_timeout=1)
        try:
            client.config_set("cluster-replica-no-failover", "yes" if held else "no")
        finally:
            client.close()

    def kill(self, port: int) -> None:
        """kill -9: no shutdown, its replica must notice and take over."""
        os.kill(self.processes[port].pid, signal.SIGKILL)
        self.processes[port].wait(10)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
