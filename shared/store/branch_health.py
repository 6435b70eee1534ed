"""Branch health: a branch that cannot push or start, recorded for its GitTargets' status (T4).

The branch worker records a stall when a pass over a branch fails (a push the remote keeps
refusing, a git call that fails, a branch that cannot start) and clears it when a pass
succeeds; the watcher reads every standing stall once a reconcile pass and shows it on the
GitTargets of that branch (``Ready=False``, the reason, and since when). ``since`` is the
first failure of the current stall: a stall that goes on keeps it.

A message never carries credentials: userinfo in a URL is masked before it is stored; nor
anything Redis cannot encode.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from shared.model.ids import BranchKey
from shared.store.connection import Client
from shared.store.keys import Keys

#: Longest message kept (a git error can quote a whole remote answer).
MESSAGE_CHARS = 300
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def scrub(message: str) -> str:
    """``message`` without credentials in URLs, one line, at most ``MESSAGE_CHARS``, and text
    Redis takes: a lone surrogate (bytes a remote sent that were not UTF-8) becomes ``?``,
    since redis-py's encoding error stopped the process (N2)."""
    text = message.encode("utf-8", "replace").decode("utf-8")
    flat = " ".join(_USERINFO.sub("***@", text).split())
    return flat[:MESSAGE_CHARS]


@dataclass(frozen=True, slots=True)
class Stall:
    """A branch's standing stall."""

    reason: str
    message: str
    since: float


class BranchHealth:
    """Standing stalls of branches, in Redis."""

    def __init__(self, client: Client, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def stalled(self, bk: BranchKey, reason: str, message: str, now: float) -> None:
        """Record (or keep) the branch's stall; ``since`` stays that of its first failure."""
        key = self._keys.branch_stall(bk)
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(key, mapping={"reason": reason, "message": scrub(message)})
        pipe.hsetnx(key, "since", repr(now))
        pipe.sadd(self._keys.stalled_branches, bk)
        pipe.execute()

    def recovered(self, bk: BranchKey) -> None:
        """The branch works again: forget its stall."""
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self._keys.branch_stall(bk))
        pipe.srem(self._keys.stalled_branches, bk)
        pipe.execute()

    def stalls(self) -> Mapping[BranchKey, Stall]:
        """Every standing stall, by branch key (two round trips)."""
        members = sorted(str(m) for m in self._r.smembers(self._keys.stalled_branches))
        if not members:
            return {}
        pipe = self._r.pipeline(transaction=False)
        for bk in members:
            pipe.hgetall(self._keys.branch_stall(BranchKey(bk)))
        found: dict[BranchKey, Stall] = {}
        for bk, fields in zip(members, pipe.execute(), strict=True):
            if fields and "since" in fields:
                found[BranchKey(bk)] = Stall(
                    str(fields.get("reason", "")),
                    str(fields.get("message", "")),
                    float(fields["since"]),
                )
        return found
