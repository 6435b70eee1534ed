"""Connecting to Redis: one server by URL, or the current primary of a Sentinel set.

redis-py 8 defaults to a 5 s socket timeout retried ten times, which turns a blocking stream
read of a few seconds into a minute-long hang (facts: webhooks-git-libs.md §3.4). Every
connection here sets a socket timeout above the longest block the code uses.

``GITOPS_REVERSER_REDIS_URL`` is ``redis://``, ``rediss://`` (TLS) or ``unix://`` for one
server, or ``redis+sentinel://[[user]:password@]host1:port1,host2:port2/<service>/<db>``
(``rediss+sentinel://`` for TLS to the sentinels and the servers) for a primary that Sentinel
names. A Sentinel client asks the sentinels for the primary each time it connects, so after a
failover the next connection goes to the new primary; the switch itself looks like an outage
(connections refused or dropped, a demoted primary's ``READONLY`` turned into a connection
error by redis-py), which every process already rides out (C9). The password is the servers';
sentinels that require one of their own take ``?sentinel_password=...``.

Every client made here is a ``MadeClient``: it remembers how it was made (``twin`` makes another
with other options, rq's undecoded one) and how many replicas an acknowledged write waits for
(``min_replicas``, ``shared.store.durable``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import redis
from redis.connection import SSLConnection
from redis.sentinel import Sentinel, SentinelManagedConnection

from shared.model.redis_url import (
    SENTINEL_SCHEMES,
    SentinelUrl,
    UrlError,
    check_url,
    parse_sentinel,
)
from shared.store.durable import WAIT_TIMEOUT_MS

#: The longest XREAD/BLPOP block any caller uses, in seconds.
MAX_BLOCK_S = 5.0
#: Socket timeout: comfortably above MAX_BLOCK_S so a block never looks like a dead socket.
SOCKET_TIMEOUT_S = MAX_BLOCK_S + 10.0


@dataclass(frozen=True, slots=True)
class _Made:
    """How a client was made: its URL and options (``Client.twin`` makes another)."""

    url: str
    options: dict[str, Any] = field(default_factory=dict)


#: The client type services may annotate with, without importing redis themselves.
Client = redis.Redis


class MadeClient(redis.Redis):
    """A redis-py client that remembers how it was made and how many replicas an
    acknowledged write waits for (``shared.store.durable``)."""

    min_replicas: int = 0
    #: The deadline of an acknowledged write's WAIT, in milliseconds (``shared.store.durable``).
    wait_timeout_ms: int = WAIT_TIMEOUT_MS
    made: _Made | None = None

    def twin(self, **options: Any) -> redis.Redis:
        """Another client to the same Redis (the same Sentinel primary), with ``options``
        changed: rq's client, which must not decode responses."""
        if self.made is None:
            raise UrlError("this client was not made by shared.store.connection")
        merged = {**self.made.options, **options}
        return open_client(
            self.made.url,
            min_replicas=self.min_replicas,
            wait_timeout_ms=self.wait_timeout_ms,
            **merged,
        )


def open_client(
    url: str, *, min_replicas: int = 0, wait_timeout_ms: int = WAIT_TIMEOUT_MS, **options: Any
) -> MadeClient:
    """A client for ``url`` (one server, or a Sentinel set's primary) with redis-py
    ``options`` (timeouts, retry, decoding, client name); an acknowledged write waits for
    ``min_replicas`` replicas, at most ``wait_timeout_ms`` (keep it under the socket timeout)."""
    check_url(url)
    client: MadeClient
    if urlsplit(url).scheme in SENTINEL_SCHEMES:
        client = _sentinel_client(parse_sentinel(url), options)
    else:
        client = cast(MadeClient, MadeClient.from_url(url, **options))
    client.min_replicas = min_replicas
    client.wait_timeout_ms = wait_timeout_ms
    client.made = _Made(url, dict(options))
    return client


class _PrimaryConnection(SentinelManagedConnection):
    """redis-py's Sentinel connection, but dropped when a read is cut short, as every other
    redis-py connection is: redis-py 8.1's keeps the socket after an exception raised inside a
    read (``disconnect_on_error`` defaults to False there), so the reply it was waiting for is
    read later as the answer to the next command. A signal handler that raises inside rq's
    idle BLPOP (its warm shutdown) left the dispatcher waiting on that reply, unable to stop
    (found by the failover tier: SIGTERM did not stop it within 30 s)."""

    def read_response(  # type: ignore[no-untyped-def]
        self, disable_decoding=False, *, disconnect_on_error=True, **kwargs
    ):
        return super().read_response(
            disable_decoding, disconnect_on_error=disconnect_on_error, **kwargs
        )


class _PrimarySSLConnection(_PrimaryConnection, SSLConnection):
    """``_PrimaryConnection`` over TLS."""


def _sentinel_client(spec: SentinelUrl, options: dict[str, Any]) -> MadeClient:
    """The primary of ``spec.service``, found through the sentinels at every connect."""
    sentinel_options: dict[str, Any] = {
        k: v for k, v in options.items() if k in ("socket_timeout", "socket_connect_timeout")
    }
    if spec.sentinel_password:
        sentinel_options["password"] = spec.sentinel_password
    if spec.tls:
        sentinel_options["ssl"] = True
    server = dict(options)
    server["db"] = spec.db
    if spec.username:
        server["username"] = spec.username
    if spec.password:
        server["password"] = spec.password
    server["connection_class"] = _PrimarySSLConnection if spec.tls else _PrimaryConnection
    sentinel = Sentinel(list(spec.sentinels), sentinel_kwargs=sentinel_options)  # type: ignore[no-untyped-call]
    primary = sentinel.master_for(spec.service, redis_class=MadeClient, **server)  # type: ignore[no-untyped-call]
    return cast(MadeClient, primary)


def connect(
    url: str,
    client_name: str = "gitops-reverser",
    min_replicas: int = 0,
    wait_timeout_ms: int = WAIT_TIMEOUT_MS,
) -> MadeClient:
    """A client for ``url`` that decodes responses to str; an acknowledged write waits for
    ``min_replicas`` replicas, at most ``wait_timeout_ms`` (``shared.store.durable``)."""
    return open_client(
        url,
        min_replicas=min_replicas,
        wait_timeout_ms=wait_timeout_ms,
        decode_responses=True,
        socket_timeout=SOCKET_TIMEOUT_S,
        socket_connect_timeout=5.0,
        health_check_interval=30,
        client_name=client_name,
    )
