"""CommitRequest progress in Redis, by the request's uid (P6).

The watcher marks a request published once it put it on its branch's events stream; the
branch worker records its outcome (``WAITING`` with the close deadline, then a final one);
the watcher reads the outcome back for the object's status. A final outcome is what makes a
request processed once: a worker that receives the request again (a duplicate publication,
or a new owner claiming it after a crash) finds it and does nothing more.

An outcome is written as the branch's owner, fenced by its lease's token like every other
branch write (``branch_state``): an owner whose lease lapsed (paused in a slow push, say) has
its outcome refused (``FencedOff``), so it never reports over its successor.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from shared.model.commit_requests import FINAL, Outcome
from shared.store.branch_state import FencedOff
from shared.store.keys import Keys
from shared.store.leases import Lease

#: How much longer than the commit-request TTL a record is kept.
SLACK_S = 86_400

# KEYS[1] the request's hash, KEYS[2] the branch's fence counter; ARGV[1] fencing token,
# ARGV[2] TTL in seconds, ARGV[3] the reasons that are final, space-separated, when the new
# outcome is not final ("" when it is), then field/value pairs. Returns 0 when the token is
# not the newest issued (nothing written), 2 when a final outcome is kept, 1 when written.
_FENCED_RECORD = """
if tonumber(redis.call('GET', KEYS[2]) or '0') ~= tonumber(ARGV[1]) then
  return 0
end
if ARGV[3] ~= '' then
  local current = redis.call('HGET', KEYS[1], 'reason')
  if current and string.find(' ' .. ARGV[3] .. ' ', ' ' .. current .. ' ', 1, true) then
    return 2
  end
end
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""


class CommitRequests:
    """Publication marks and outcomes of CommitRequests."""

    def __init__(self, client: redis.Redis, keys: Keys, ttl_s: float) -> None:
        self._r = client
        self._keys = keys
        self._ttl_s = int(ttl_s) + SLACK_S
        self._record = client.register_script(_FENCED_RECORD)

    def mark_published(self, uid: str, at: float) -> None:
        """The request is on its branch's stream (published once: the watcher checks first)."""
        key = self._keys.commit_request(uid)
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, "published", repr(at))
        pipe.expire(key, self._ttl_s)
        pipe.execute()

    def record(self, lease: Lease, uid: str, outcome: Outcome) -> None:
        """Store the outcome as the owner of the request's branch holding ``lease`` (a final
        one is never replaced by ``WAITING``); raises FencedOff when the token is stale."""
        keys = [self._keys.commit_request(uid), self._keys.branch_fence(lease.branch)]
        keep = "" if outcome.final else " ".join(sorted(FINAL))
        args: list[str | int] = [lease.token, self._ttl_s, keep]
        for name, value in outcome.to_fields().items():
            args += [name, value]
        if not self._record(keys=keys, args=args):
            raise FencedOff(f"branch {lease.branch}: token {lease.token} is no longer current")

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
