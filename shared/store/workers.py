"""Branch-worker heartbeats, so that live workers can share the branches fairly (Q1)."""

from __future__ import annotations

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys


class WorkerRegistry:
    """Who is alive, and which branches exist."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def heartbeat(self, worker_id: str, now: float, lease_s: float) -> int:
        """Record that ``worker_id`` is alive; returns how many workers are alive."""
        pipe = self._r.pipeline(transaction=True)
        pipe.zadd(self._keys.workers, {worker_id: now})
        pipe.zremrangebyscore(self._keys.workers, "-inf", now - lease_s)
        pipe.zcard(self._keys.workers)
        return int(pipe.execute()[2])

    def leave(self, worker_id: str) -> None:
        """A clean shutdown: stop counting this worker at once."""
        self._r.zrem(self._keys.workers, worker_id)

    def branches(self) -> list[BranchKey]:
        """Every branch with work, in a stable order."""
        return sorted(BranchKey(str(b)) for b in self._r.smembers(self._keys.branches))
