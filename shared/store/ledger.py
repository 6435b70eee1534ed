"""The ledger behind ``GitTarget.status.applier`` (S3), one entry per GitTarget incarnation.

Keyed by uid, so a GitTarget deleted and recreated under the same name never inherits its
predecessor's request; ``ConfigStore.forget_target`` deletes the entry with the rest of the
incarnation's keys. The dispatcher writes each attempt's request and outcome; the watcher
publishes the entry into the GitTarget's status when it changes (O6). Entries go in and come
out as ``LastRequest`` records, so no caller handles their JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import redis

from shared.model.ids import GitTargetUid
from shared.model.ledger import LastRequest
from shared.store.keys import Keys


class Ledger:
    """Read and write ``status.applier.lastRequest`` per GitTarget uid."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def record(self, uids: Iterable[str], last_request: LastRequest) -> None:
        """Set the last request of every GitTarget it served (changes ``version``)."""
        text = last_request.to_json()
        pipe = self._r.pipeline(transaction=True)
        for uid in uids:
            key = self._keys.ledger(GitTargetUid(uid))
            pipe.hset(key, "lastRequest", text)
            pipe.hincrby(key, "version", 1)
        pipe.execute()

    def last_request(self, uid: GitTargetUid) -> tuple[LastRequest | None, int]:
        """The last request recorded for a GitTarget incarnation, and the entry's version.

        ValueError when the stored entry is not one ``LastRequest.to_json`` wrote.
        """
        raw: dict[str, str] = self._r.hgetall(self._keys.ledger(uid))  # type: ignore[assignment]
        text = raw.get("lastRequest")
        entry = LastRequest.from_json(text) if text else None
        return entry, int(raw.get("version") or 0)

    def versions(self, uids: Sequence[GitTargetUid]) -> dict[GitTargetUid, int]:
        """Each entry's version in one round trip (0 when there is none): the cheap poll of O6."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hget(self._keys.ledger(uid), "version")
        answers = pipe.execute()
        return {uid: int(v or 0) for uid, v in zip(uids, answers, strict=True)}
