"""Webhook receivers by path digest: the watcher publishes them, the receiver looks them up.

One string key per receiver (``Keys.receiver(digest)``, a ``ReceiverRecord`` as JSON) and a set
of every published digest (``Keys.receivers``), so the watcher can forget a receiver whose
GitProvider vanished while no watcher ran. A record names the Secret, never its value (R5).
"""

from __future__ import annotations

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.model.receivers import ReceiverRecord, RecordError
from shared.store.connection import MadeClient, open_client
from shared.store.durable import WAIT_TIMEOUT_MS
from shared.store.errors import unavailable_as_error
from shared.store.keys import Keys

#: Seconds a receiver waits for Redis to connect or answer. A Git host gives up on a delivery
#: after 10 s (GitHub, facts: webhooks-git-libs.md §1.1), so an unresponsive Redis must turn
#: into a 503 well before that, not after redis-py 8's default of ten 5 s attempts (§3.4).
RECEIVER_TIMEOUT_S = 2.0
#: One retry: a connection dropped while idle is re-made once; a dead Redis is not waited on.
RECEIVER_RETRIES = 1


def receiver_client(
    url: str,
    timeout_s: float = RECEIVER_TIMEOUT_S,
    min_replicas: int = 0,
    wait_timeout_ms: int = WAIT_TIMEOUT_MS,
) -> MadeClient:
    """A client for the receiver, which never blocks on Redis: short timeouts, one retry
    (a Sentinel set's primary too: ``shared.store.connection``)."""
    return open_client(
        url,
        min_replicas=min_replicas,
        wait_timeout_ms=wait_timeout_ms,
        decode_responses=True,
        socket_timeout=timeout_s,
        socket_connect_timeout=timeout_s,
        retry=Retry(NoBackoff(), RECEIVER_RETRIES),
        health_check_interval=30,
        client_name="receiver",
    )


class ReceiverDirectory:
    """Publish, look up and forget receiver records."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        #: What this process last published per digest: a record published again unchanged
        #: is not written (the watcher's pass publishes every receiver; four commands per
        #: GitProvider every pass were the largest part of an idle install's Redis traffic).
        self._written: dict[str, str] = {}

    def publish(self, digest: str, record: ReceiverRecord) -> None:
        """Record (or replace) the receiver served at ``/hook/<digest>``; nothing is sent when
        this process published the same record there already (``forget_published`` after
        Redis lost its data, C8)."""
        text = record.to_json()
        if self._written.get(digest) == text:
            return
        pipe = self._r.pipeline(transaction=True)
        pipe.set(self._keys.receiver(digest), text)
        pipe.sadd(self._keys.receivers, digest)
        pipe.execute()
        self._written[digest] = text

    def forget_published(self) -> None:
        """Redis lost what was published (C8): the next ``publish`` of each record writes it."""
        self._written.clear()

    def forget(self, digest: str) -> None:
        """Stop serving ``/hook/<digest>`` (GitProvider or receiver gone, token changed)."""
        self._written.pop(digest, None)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self._keys.receiver(digest))
        pipe.srem(self._keys.receivers, digest)
        pipe.execute()

    def published(self) -> set[str]:
        """Every digest published so far (the watcher sweeps the ones it no longer serves)."""
        return {str(d) for d in self._r.smembers(self._keys.receivers)}

    def lookup(self, digest: str) -> ReceiverRecord | None:
        """The receiver at ``/hook/<digest>``; None when there is none or its record is unreadable.

        Raises ``StoreUnavailable`` when Redis does not answer.
        """
        with unavailable_as_error("receiver lookup"):
            text = self._r.get(self._keys.receiver(digest))
        if text is None:
            return None
        try:
            return ReceiverRecord.from_json(str(text))
        except RecordError:
            return None

    def reachable(self) -> bool:
        """True when Redis answers a PING (the receiver's readiness, R3)."""
        try:
            return bool(self._r.ping())
        except redis.RedisError:
            return False
