"""A small thread-safe cache whose entries expire: for what the receiver reads on every delivery.

Every delivery needs its receiver record (Redis) and its token (a Kubernetes Secret). Reading
both each time would cost two extra round trips per delivery and make the API server the
receiver's bottleneck, so answers are kept for a few seconds, including "there is none" (so a
scanner probing random paths costs Redis nothing more). The cache is bounded, because those
keys come from requests: when full it starts over. Failures (Redis or the API unreachable)
are never cached.

An expired entry is reloaded by the one thread that finds it expired first; while that load is
out, the other threads keep the old answer (for at most one more ``ttl``) instead of each
loading it again. Without this, every expiry under load sent every thread that read the entry
to Redis or the API server at once, each delivery waiting for its own load.
A thread that reads alone, or after the extra ``ttl``, loads as before, so an answer is never
older than ``ttl`` plus one load when read in turn, and never older than twice ``ttl``.
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
        #: Keys whose entry a thread is loading now, with how many threads are.
        self._loading: dict[K, int] = {}

    def get(self, key: K, load: Callable[[K], V]) -> V:
        """The cached value of ``key``, or a fresh one; ``load``'s exceptions pass through."""
        now = self._clock()
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                age = now - hit[1]
                if age < self._ttl:
                    return hit[0]
                if key in self._loading and age < 2 * self._ttl:
                    return hit[0]  # another thread is reloading it: the old answer meanwhile
            self._loading[key] = self._loading.get(key, 0) + 1
        try:
            value = load(key)  # outside the lock: other threads go on meanwhile
        finally:
            with self._lock:
                left = self._loading.pop(key) - 1
                if left:
                    self._loading[key] = left
        if self._ttl > 0:
            with self._lock:
                kept = self._entries.get(key)
                if kept is None or kept[1] <= now:  # never replace a fresher answer
                    if len(self._entries) >= self._max:
                        self._entries.clear()
                    self._entries[key] = (value, now)
        return value
