"""The ledger behind ``GitTarget.status.applier`` (S3), one entry per GitTarget incarnation.

Keyed by uid, so a GitTarget deleted and recreated under the same name never inherits its
predecessor's request; ``ConfigStore.forget_target`` deletes the entry with the rest of the
incarnation's keys. The dispatcher writes each attempt's request and outcome; the watcher
publishes the entry into the GitTarget's status when it changes (O6).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import redis

from shared.model.ids import GitTargetUid
from shared.store.keys import Keys


class Ledger:
    """Read and write ``status.applier.lastRequest`` per GitTarget uid."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def record(self, uids: Iterable[str], last_request: dict[str, Any]) -> None:
        """Set the last request of every GitTarget it served (changes ``version``)."""
        text = json.dumps(last_request, sort_keys=True)
        pipe = self._r.pipeline(transaction=True)
        for uid in uids:
            key = self._keys.ledger(GitTargetUid(uid))
            pipe.hset(key, "lastRequest", text)
            pipe.hincrby(key, "version", 1)
        pipe.execute()

    def last_request(self, uid: GitTargetUid) -> tuple[dict[str, Any] | None, int]:
        """The last request recorded for a GitTarget incarnation, and the entry's version."""
        raw: dict[str, str] = self._r.hgetall(self._keys.ledger(uid))  # type: ignore[assignment]
        text = raw.get("lastRequest")
        return (json.loads(text) if text else None), int(raw.get("version") or 0)

    def versions(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, int]:
        """Each entry's version in one round trip (0 when there is none): the cheap poll of O6."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.ledger(uid), "version")
        answers = pipe.execute()
        return {uid: int(v or 0) for uid, v in zip(uids, answers, strict=True)}
