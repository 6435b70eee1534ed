"""When the API side last edited each object of a branch (W1), kept for the apply window.

The apply window withholds the applier's revert of an API edit made after the request was
sent; it needs the time of that edit when the revert arrives. That time was kept only in the
owner's memory, so a branch taken again (its worker killed, or its lease lost while Redis was
away) forgot the edit, and the revert that came after was mirrored: the API edit was lost in
Git and in the cluster alike (the soak's cm-00057, an API delete that an apply re-created).

A sorted set per branch: member = the object's key within its GitTarget, score = the edit's
observed time. Each write keeps the later time (``GT``), drops what no window can need any more
(older than ``keep_s``) and renews the TTL, so the set is bounded by the objects edited within
``keep_s`` and goes on its own once the branch is quiet.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from shared.model.ids import BranchKey
from shared.store.keys import Keys

#: Separates the parts of an object's key in a member (a control character no name holds).
SEP = "\x1f"


def member(parts: Sequence[str]) -> str:
    """The member naming one object of one GitTarget."""
    return SEP.join(parts)


class ApiEdits:
    """Record and read the last API edit of each object of a branch."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def remember(self, bk: BranchKey, parts: Sequence[str], at: float, keep_s: float) -> None:
        """Keep ``at`` as the object's last API edit unless a later one is kept."""
        key = self._keys.branch_api_edits(bk)
        pipe = self._r.pipeline(transaction=True)
        pipe.zadd(key, {member(parts): at}, gt=True)
        pipe.zremrangebyscore(key, "-inf", f"({at - keep_s}")
        pipe.expire(key, max(1, int(keep_s)))
        pipe.execute()

    def last(self, bk: BranchKey, parts: Sequence[str]) -> float | None:
        """The object's last API edit kept, or None."""
        found = self._r.zscore(self._keys.branch_api_edits(bk), member(parts))
        return None if found is None else float(found)
