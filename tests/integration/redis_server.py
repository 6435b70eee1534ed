"""A private redis-server a test can stop, restart empty and flush (C8, C9, D2).

Like ``scripts/with-redis``, and the same binary (``sandbox.localredis.redis_binary``):
loopback, a free port, nothing kept on disk, so a restart comes back empty, as a Redis without
persistence does after a crash. With ``aof=True`` it persists as the product needs Redis to
(docs/architecture.md "Redis persistence": AOF, fsync before every reply), so a kill -9 and a
start come back with every acknowledged write (the soak).
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sandbox.localredis import redis_binary
from shared.store.connection import connect

#: How long a started server may take to answer (with AOF: to load its file too).
START_S = 30.0
#: What the product needs of Redis to lose nothing to a crash: every write appended and
#: fsync'ed before Redis replies (``everysec`` may lose the last second of acknowledged writes).
PERSISTENT = ("--appendonly", "yes", "--appendfsync", "always")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process on a fixed port, started and stopped by the test."""

    def __init__(self, directory: Path, *, aof: bool = False, extra: tuple[str, ...] = ()) -> None:
        self.port = _free_port()
        self.directory = directory
        self.aof = aof
        #: More arguments for redis-server (``--replicaof HOST PORT``: a replica).
        self.extra = extra
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return connect(self.url, client_name="tests")

    def start(self) -> None:
        """Start it (empty, or with its AOF's data) and wait until it answers."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self._process = subprocess.Popen(
            [
                redis_binary(),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                *(PERSISTENT if self.aof else ("--appendonly", "no")),
                "--dir",
                str(self.directory),
                # a replica's first sync starts at once, not after the default 5 s
                "--repl-diskless-sync-delay",
                "0",
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + START_S
        probe = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        while True:
            try:
                probe.ping()
                break
            except redis.ConnectionError:
                # waiting for a process we just started: redis has no readiness signal
                assert time.monotonic() < deadline, "redis-server did not start"
                assert self._process.poll() is None, "redis-server exited"
                time.sleep(0.02)
        probe.close()

    def pid(self) -> int:
        """The running server's process id."""
        assert self._process is not None, "not started"
        return self._process.pid

    def running(self) -> bool:
        """Whether it was started and has not been stopped (or died)."""
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """Kill it (SIGKILL; its data goes with it unless ``aof``) and wait until it is gone."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    try:
        redis_binary()
    except SystemExit as err:
        pytest.fail(f"these tests need a redis-server: {err}")
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()
