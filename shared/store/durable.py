"""Acknowledged writes that survive a failover: wait for replicas (``WAIT``) before saying done.

Redis replicates asynchronously: a primary answers a write before any replica has it, so a
failover (Sentinel promoting a replica after the primary died) can drop writes the product
already acknowledged: an API edit the watcher moved its cursor past, a delivery the receiver
answered 202, an outcome the dispatcher reported. With ``GITOPS_REVERSER_REDIS_MIN_REPLICAS``
(``Client.min_replicas``) at N > 0, each such write runs inside ``acknowledged``: on one
connection, followed by ``WAIT N timeout`` on that same connection (``WAIT`` counts the
replicas that have every write *that connection* made). Fewer than N replicas by its deadline
(``WAIT_TIMEOUT_MS`` unless the client was made with another), or a connection that was
re-made in between (a reconnect lands on whichever server is primary now, where the count says
nothing of the write made on the old one), and the write counts as not done: ``ReplicasBehind``,
a ``redis.ConnectionError``, so every caller treats it as the outage it handles already (C9:
retry, acknowledge nothing).

``WAIT`` covers what the connection wrote, so a block that wrote nothing (a retry whose
script found its write done already: a report's guard set, a delivery's replay guard, an ack of
entries gone) would be confirmed at once, though the first try's write may not have reached a
replica. Every wait is therefore preceded by a ``PUBLISH`` on the same connection (``FENCE``):
a write that is replicated after everything the primary took before it, so the count covers
every earlier write on this server, whichever connection made it; both go in one round trip.

At N = 0 (the default, and a Redis without replicas) ``acknowledged`` gives the client back as
it is: no extra round trip.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import redis

#: The longest an acknowledged write waits for its replicas, in milliseconds: well inside the
#: receiver's 2 s Redis timeout (a Git host gives up after 10 s) and the other clients' 15 s.
WAIT_TIMEOUT_MS = 1000


#: The channel of the fence before each WAIT (nobody subscribes; a PUBLISH is replicated).
FENCE = "gitops-reverser:durable-fence"


def fence_and_wait(connection: Any, replicas: int, timeout_ms: int = WAIT_TIMEOUT_MS) -> int:
    """On ``connection``: a replicated no-op write, then ``WAIT replicas timeout_ms``, in one
    round trip; how many replicas confirmed both (and so everything the primary took before).
    ``WAIT`` answers as soon as that many replicas confirm; ``timeout_ms`` is its deadline."""
    connection.send_packed_command(
        connection.pack_commands([("PUBLISH", FENCE, ""), ("WAIT", replicas, timeout_ms)])
    )
    connection.read_response()
    return int(connection.read_response())


class ReplicasBehind(redis.ConnectionError):
    """Fewer replicas than asked confirmed a write in time: it is not done (a Redis outage to
    the caller, who retries and acknowledges nothing)."""


def min_replicas(client: redis.Redis) -> int:
    """How many replicas an acknowledged write on ``client`` waits for (0: none)."""
    return int(getattr(client, "min_replicas", 0) or 0)


def wait_timeout_ms(client: redis.Redis) -> int:
    """The deadline of an acknowledged write's ``WAIT`` on ``client``, in milliseconds
    (``WAIT_TIMEOUT_MS`` unless it was made with another)."""
    return int(getattr(client, "wait_timeout_ms", 0) or WAIT_TIMEOUT_MS)


class _Reconnects:
    """Counts connects of one connection (its callbacks must be methods: weak references)."""

    def __init__(self) -> None:
        self.count = 0

    def saw(self, connection: Any) -> None:
        self.count += 1


class _OnePool:
    """A connection pool that always hands out one borrowed connection and never frees it;
    everything else is the real pool's."""

    def __init__(self, pool: Any, connection: Any) -> None:
        self._pool = pool
        self._connection = connection

    def get_connection(self, *args: Any, **kwargs: Any) -> Any:
        return self._connection

    def release(self, connection: Any) -> None:
        """The connection goes back to the real pool when the scope ends, not before."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


@contextmanager
def acknowledged(client: redis.Redis, replicas: int | None = None) -> Iterator[redis.Redis]:
    """A client whose every command and pipeline runs on one connection; at the end of the
    block, ``WAIT`` for ``replicas`` (default: the client's ``min_replicas``) on it.

    Raises ``ReplicasBehind`` when fewer replicas answer within the client's deadline
    (``wait_timeout_ms``) or the
    connection was re-made inside the block. Scripts registered on ``client`` run on the
    pinned one when called with ``client=`` the yielded client.
    """
    wanted = min_replicas(client) if replicas is None else replicas
    if wanted <= 0:
        yield client
        return
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # connected (and health-checked) by the pool
    watch = _Reconnects()
    connection.register_connect_callback(watch.saw)
    try:
        pinned = redis.Redis(connection_pool=_OnePool(pool, connection))  # type: ignore[arg-type]
        yield pinned
        if watch.count:
            raise ReplicasBehind("the connection was re-made during the write: not confirmed")
        deadline_ms = wait_timeout_ms(client)
        confirmed = fence_and_wait(connection, wanted, deadline_ms)
        if watch.count:
            raise ReplicasBehind("the connection was re-made during WAIT: not confirmed")
        if confirmed < wanted:
            raise ReplicasBehind(
                f"{confirmed} of {wanted} replica(s) confirmed the write within {deadline_ms} ms"
            )
    finally:
        connection.deregister_connect_callback(watch.saw)
        pool.release(connection)
