"""Whether Redis answers, for a process's ``/readyz`` (``shared.health``).

The probe keeps a connection of its own with short timeouts and no retries: the process's
own clients wait up to 15 s on a socket and retry (``connection.py``), which is right for a
blocking read and wrong for a probe that must answer within a second or two.
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.store.connection import open_client

#: Longest a PING may take, connecting included, before Redis counts as unreachable.
PROBE_TIMEOUT_S = 1.0


class RedisProbe:
    """``probe()`` is None when Redis answers a PING within ``timeout_s``, else why not."""

    def __init__(self, url: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
        self._client = open_client(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            client_name="readiness",
        )

    def __call__(self) -> str | None:
        try:
            self._client.ping()
        except redis.RedisError as err:
            return f"Redis unreachable ({type(err).__name__})"
        return None

    def close(self) -> None:
        """Drop the probe's connection."""
        self._client.close()
