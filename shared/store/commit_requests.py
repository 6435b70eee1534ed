"""CommitRequest progress in Redis, by the request's uid (P6).

The watcher marks a request published once it put it on its branch's events stream; the
branch worker records its outcome (``WAITING`` with the close deadline, then a final one);
the watcher reads the outcome back for the object's status. A final outcome is what makes a
request processed once: a worker that receives the request again (a duplicate publication,
or a new owner claiming it after a crash) finds it and does nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from shared.model.commit_requests import Outcome
from shared.store.keys import Keys

#: How much longer than the commit-request TTL a record is kept.
SLACK_S = 86_400


class CommitRequests:
    """Publication marks and outcomes of CommitRequests."""

    def __init__(self, client: redis.Redis, keys: Keys, ttl_s: float) -> None:
        self._r = client
        self._keys = keys
        self._ttl_s = int(ttl_s) + SLACK_S

    def mark_published(self, uid: str, at: float) -> None:
        """The request is on its branch's stream (published once: the watcher checks first)."""
        key = self._keys.commit_request(uid)
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, "published", repr(at))
        pipe.expire(key, self._ttl_s)
        pipe.execute()

    def record(self, uid: str, outcome: Outcome) -> None:
        """Store the branch worker's outcome (a final one is never replaced by ``WAITING``)."""
        key = self._keys.commit_request(uid)
        if not outcome.final:
            current = self.outcome(uid)
            if current is not None and current.final:
                return
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, mapping=dict(outcome.to_fields()))  # type: ignore[arg-type]
        pipe.expire(key, self._ttl_s)
        pipe.execute()

    def outcome(self, uid: str) -> Outcome | None:
        """The recorded outcome, or None."""
        raw: dict[str, str] = self._r.hgetall(self._keys.commit_request(uid))  # type: ignore[assignment]
        return Outcome.from_fields(raw)

    def progress(self, uids: Sequence[str]) -> dict[str, tuple[bool, Outcome | None]]:
        """For each uid, whether it was published and its outcome, in one round trip."""
        pipe = self._r.pipeline(transaction=False)
        for uid in uids:
            pipe.hgetall(self._keys.commit_request(uid))
        answers: list[dict[str, str]] = pipe.execute()
        return {
            uid: (bool(raw.get("published")), Outcome.from_fields(raw))
            for uid, raw in zip(uids, answers, strict=True)
        }

    def forget(self, uid: str) -> None:
        """Drop a deleted request's record."""
        self._r.delete(self._keys.commit_request(uid))
