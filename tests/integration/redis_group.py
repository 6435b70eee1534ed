"""A real Redis replication group behind Sentinel, from Debian's packages, on loopback.

A primary, replicas and sentinels, each ``redis-server`` / ``redis-sentinel`` on a free
loopback port with AOF on (fsync before every reply: docs/architecture.md "Redis
persistence"). ``kill_primary`` SIGKILLs whichever server the sentinels name primary now and
waits for the sentinels' ``+switch-master`` event (no fixed sleep); ``restart`` brings a killed
server back with its AOF (the sentinels then turn it into a replica of the new primary).

Sentinel timings are short (``DOWN_AFTER_MS``) so a failover takes a couple of seconds.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis

from shared.store.connection import connect
from tests.integration.redis_server import RedisServer, _free_port

#: Milliseconds without an answer before a sentinel holds the primary down.
DOWN_AFTER_MS = 1000
#: Sentinel's failover timeout (also how soon a failed failover is tried again).
FAILOVER_TIMEOUT_MS = 4000
#: How long a group may take to come up, and a failover to finish.
DEADLINE_S = 60.0
#: The service name the sentinels monitor.
SERVICE = "gr-primary"

T = TypeVar("T")


def sentinel_binary() -> str:
    """Debian's ``redis-sentinel`` (``apt-get install -y redis-sentinel``; ``.ci/run`` does)."""
    found = shutil.which("redis-sentinel")
    if found is None:
        pytest.fail("the failover tier needs redis-sentinel: apt-get install -y redis-sentinel")
    return found


def wait_for(what: str, check: Callable[[], T | None], deadline_s: float = DEADLINE_S) -> T:
    """Poll ``check`` until it returns something other than None (or a false value), failing
    after ``deadline_s``: for conditions no process signals (a server answering, a
    replication link up)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            value = check()
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class SentinelProcess:
    """One ``redis-sentinel`` with a config file of its own (Sentinel rewrites it)."""

    def __init__(self, directory: Path, primary_port: int, quorum: int) -> None:
        self.port = _free_port()
        self.directory = directory
        self.primary_port = primary_port
        self.quorum = quorum
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "sentinel.conf"
        config.write_text(
            f"port {self.port}\n"
            "bind 127.0.0.1\n"
            f"dir {self.directory}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary_port} {self.quorum}\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {SERVICE} 2\n"
        )
        self._process = subprocess.Popen(
            [sentinel_binary(), str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for("a sentinel to answer", self.client().ping)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, socket_timeout=5.0)

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None


@dataclass(frozen=True)
class Failover:
    """One failover: the server killed, the one promoted, and how long the switch took (from
    the kill to the sentinels' ``+switch-master``)."""

    old_port: int
    new_port: int
    seconds: float


class SentinelGroup:
    """A primary, ``replicas`` replicas and ``sentinels`` sentinels (quorum: a majority)."""

    def __init__(self, directory: Path, *, replicas: int = 2, sentinels: int = 3) -> None:
        self.directory = directory
        self.servers: list[RedisServer] = [RedisServer(directory / "server-0", aof=True)]
        primary = self.servers[0].port
        for index in range(1, replicas + 1):
            self.servers.append(
                RedisServer(
                    directory / f"server-{index}",
                    aof=True,
                    extra=("--replicaof", "127.0.0.1", str(primary)),
                )
            )
        quorum = sentinels // 2 + 1
        self.sentinels = [
            SentinelProcess(directory / f"sentinel-{i}", primary, quorum) for i in range(sentinels)
        ]
        self.failovers: list[Failover] = []

    def url(self, db: int = 0) -> str:
        """The product's ``GITOPS_REVERSER_REDIS_URL`` for this group."""
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/{db}"

    def start(self) -> None:
        """Start every server and sentinel; return once the primary has every replica linked
        and every sentinel knows the replicas and the other sentinels."""
        for server in self.servers:
            server.start()
        for sentinel in self.sentinels:
            sentinel.start()
        self.wait_settled()

    def wait_settled(self) -> None:
        """Every replica linked to the current primary, every sentinel aware of the
        replicas and of the other sentinels."""
        replicas = len(self.servers) - 1

        def linked() -> bool:
            info = self.primary().client().info("replication")
            online = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
            return len([v for v in online if v.get("state") == "online"]) >= replicas

        wait_for("every replica linked", linked)
        for sentinel in self.sentinels:
            wait_for("a sentinel to know the group", partial(self._knows, sentinel, replicas))

    def _knows(self, sentinel: SentinelProcess, replicas: int) -> bool:
        """Whether ``sentinel`` knows ``replicas`` replicas and every other sentinel."""
        client: Any = sentinel.client()
        return (
            len(client.sentinel_slaves(SERVICE)) >= replicas
            and len(client.sentinel_sentinels(SERVICE)) >= len(self.sentinels) - 1
        )

    def primary_port(self) -> int:
        """The port the sentinels name primary now."""
        client: Any = self.sentinels[0].client()
        _, port = client.sentinel_get_master_addr_by_name(SERVICE)
        return int(port)

    def primary(self) -> RedisServer:
        port = self.primary_port()
        return next(s for s in self.servers if s.port == port)

    def kill_primary(self, restart: bool = True) -> Failover:
        """SIGKILL the primary, wait for ``+switch-master`` (then, with ``restart``, start the
        killed server again on its AOF, to be made a replica)."""
        old = self.primary()
        client: Any = self.sentinels[0].client()
        watch = client.pubsub(ignore_subscribe_messages=True)
        watch.subscribe("+switch-master")
        started = time.monotonic()
        old.stop()
        new_port = 0
        deadline = started + DEADLINE_S
        while not new_port:
            assert time.monotonic() < deadline, "no +switch-master"
            message = watch.get_message(timeout=1.0)
            if message is not None and message["type"] == "message":
                # "<service> <old ip> <old port> <new ip> <new port>"
                new_port = int(str(message["data"]).split()[4])
        watch.close()
        failover = Failover(old.port, new_port, time.monotonic() - started)
        self.failovers.append(failover)
        if restart:
            old.start()
        return failover

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            server.stop()


class PrimaryKiller:
    """The soak's Redis, as a Sentinel group: ``stop`` SIGKILLs the primary and returns once
    the sentinels promoted a replica; ``start`` brings back what was killed (on its AOF; the
    sentinels make it a replica of the new primary). Stands where a ``RedisServer`` does."""

    def __init__(self, group: SentinelGroup) -> None:
        self.group = group

    @property
    def url(self) -> str:
        return self.group.url()

    def client(self) -> redis.Redis:
        return connect(self.url, client_name="tests")

    def stop(self) -> None:
        self.group.kill_primary(restart=False)

    def start(self) -> None:
        for server in self.group.servers:
            if not server.running():
                server.start()

    def running(self) -> bool:
        return all(server.running() for server in self.group.servers)

    def report(self) -> list[str]:
        """One line for the failovers and one for each."""
        times = [f.seconds for f in self.group.failovers]
        lines = [
            f"failovers: {len(times)}"
            + (
                f" (kill to +switch-master: min {min(times):.1f}s, max {max(times):.1f}s, "
                f"mean {sum(times) / len(times):.1f}s)"
                if times
                else ""
            )
        ]
        lines += [
            f"failover {i}: :{f.old_port} -> :{f.new_port} in {f.seconds:.1f}s"
            for i, f in enumerate(self.group.failovers, 1)
        ]
        return lines


@pytest.fixture
def sentinel_group(tmp_path: Path) -> Iterator[SentinelGroup]:
    group = SentinelGroup(tmp_path / "group")
    try:
        group.start()
        yield group
    finally:
        group.stop()
