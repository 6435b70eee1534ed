"""A small thread-safe cache whose entries expire: for what the receiver reads on every delivery.

Every delivery needs its receiver record (Redis) and its token (a Kubernetes Secret). Reading
both each time would cost two extra round trips per delivery and make the API server the
receiver's bottleneck, so answers are kept for a few seconds, including "there is none" (so a
scanner probing random paths costs Redis nothing more). The cache is bounded, because those
keys come from requests: when full it starts over. Failures (Redis or the API unreachable)
are never cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from datetime import timedelta
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
#: Entries kept at most; real keys number the GitProviders with a receiver.
MAX_ENTRIES = 10_000


class TtlCache(Generic[K, V]):
    """``get(key, load)``: the value loaded within ``ttl``, else ``load(key)`` (and kept)."""

    def __init__(
        self, ttl: timedelta, clock: Callable[[], float], max_entries: int = MAX_ENTRIES
    ) -> None:
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: dict[K, tuple[V, float]] = {}

    def get(self, key: K, load: Callable[[K], V]) -> V:
        """The cached value of ``key``, or a fresh one; ``load``'s exceptions pass through."""
        now = self._clock()
        with self._lock:
            hit = self._entries.get(key)
        if hit is not None and now - hit[1] < self._ttl:
            return hit[0]
        value = load(key)  # outside the lock: other threads go on meanwhile
        if self._ttl > 0:
            with self._lock:
                if len(self._entries) >= self._max:
                    self._entries.clear()
                self._entries[key] = (value, now)
        return value
