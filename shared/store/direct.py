"""One Redis connection per thread, used without redis-py's pool, for a hot command (R3, R4).

redis-py 8 wraps every command in more Python than the round trip itself costs: the pool
hands out a connection (a fork check, a lock, a poll of the socket to see it holds no stale
reply, connection-count metrics), the command runs inside a retry wrapper that times it for
its observability hooks, and the pool takes the connection back. For the receiver's one
command per delivery that was about 25 us of CPU out of a PING's 40 (profiled: py-spy of the
gunicorn workers under load, and ``Redis.execute_command`` against a direct send/read).

``ThreadConnections`` keeps one connection per thread, made by the client's own pool (so the
same host, timeouts, client name, health checks and reply decoding), and sends a command on
it directly. What the pooled path guarantees is kept: a connection that fails (refused,
dropped, timed out) is closed and the command is tried again on a fresh one, as many times as
the client's ``Retry`` allows; a reply that is an error (``ResponseError``, ``NoScriptError``)
is raised and leaves the connection usable; a connection is never shared between threads or
carried across a fork.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import redis

from shared.store.durable import ReplicasBehind, fence_and_wait, wait_timeout_ms
from shared.store.errors import REDIS_DOWN


class ThreadConnections:
    """Runs single commands on a per-thread connection of ``client``'s pool."""

    __slots__ = ("_local", "_pool", "_retries", "_wait_ms")

    def __init__(self, client: redis.Redis) -> None:
        self._pool = client.connection_pool
        retry = client.get_retry()
        self._retries = retry.get_retries() if retry is not None else 0
        self._local = threading.local()
        self._wait_ms = wait_timeout_ms(client)

    def _connection(self) -> Any:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            conn = local.conn = self._pool.make_connection()
            local.pid = os.getpid()
        return conn

    def execute(self, *args: Any) -> Any:
        """Send one command and return its reply (raises what redis-py raises)."""
        conn = self._connection()
        attempt = 0
        while True:
            try:
                conn.send_command(*args)
                return conn.read_response()
            except REDIS_DOWN:
                conn.disconnect()  # the next attempt connects afresh
                if attempt >= self._retries:
                    raise
                attempt += 1
            except redis.ResponseError:
                raise  # a whole reply was read: the connection is fine
            except BaseException:
                conn.disconnect()  # a reply may be half read: never reuse the socket
                raise

    def execute_acknowledged(self, replicas: int, *args: Any) -> Any:
        """``execute``, then, when ``replicas`` > 0, ``WAIT`` for that many replicas on the
        same connection (``shared.store.durable``); raises ``ReplicasBehind`` (a connection
        error: the caller's outage) when fewer confirm in time or the connection fails in
        between. A retried command ran again on the fresh connection, so the wait covers it."""
        reply = self.execute(*args)
        if replicas <= 0:
            return reply
        conn = self._connection()
        try:
            confirmed = fence_and_wait(conn, replicas, self._wait_ms)
        except REDIS_DOWN as err:
            conn.disconnect()
            raise ReplicasBehind(f"WAIT failed: {type(err).__name__}") from err
        except BaseException:
            conn.disconnect()
            raise
        if confirmed < replicas:
            raise ReplicasBehind(
                f"{confirmed} of {replicas} replica(s) confirmed the write within "
                f"{self._wait_ms} ms"
            )
        return reply

    def close(self) -> None:
        """Close this thread's connection (the others close with their threads' objects)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.disconnect()
            self._local.conn = None
