"""The branch owner's side of the notices stream: read the hints that arrived since last time.

Notices are hints (R4, Q5), so there is no consumer group: the owner remembers the last id it
read, and a new owner starts from the end of the stream, since it reads the tip when it takes
the branch anyway. A worker reads the notices of all its idle branches in one ``XREAD``
(``read_many``), so an idle branch costs no command of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from shared.model.ids import BranchKey
from shared.model.notices import PushNotice
from shared.store.keys import Keys
from shared.store.notices import MAX_NOTICES

#: Most notices read per branch in one call: more than a capped stream holds (``MAXLEN ~``
#: trims in whole nodes, so a stream may hold somewhat more than ``MAX_NOTICES``), so one read
#: takes every notice waiting and the branch's pass reads its tip once for all of them (C4).
READ_ALL = 2 * MAX_NOTICES


class NoticeReader:
    """Reads each branch's notices in order, once."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys
        self._cursor: dict[BranchKey, str] = {}

    def start(self, bk: BranchKey) -> None:
        """Begin after the newest notice now in the stream."""
        newest: Any = self._r.xrevrange(self._keys.branch_notices(bk), count=1)
        self._cursor[bk] = newest[0][0] if newest else "0-0"

    def read(self, bk: BranchKey, count: int = READ_ALL) -> list[PushNotice]:
        """Notices that arrived since the last read."""
        return self.read_many([bk], count).get(bk, [])

    def read_many(
        self, bks: Sequence[BranchKey], count: int = READ_ALL
    ) -> dict[BranchKey, list[PushNotice]]:
        """Notices of several branches that arrived since each one's last read, in one call;
        branches with none are left out."""
        if not bks:
            return {}
        by_key = {self._keys.branch_notices(bk): bk for bk in bks}
        streams: dict[Any, Any] = {key: self._cursor.get(bk, "0-0") for key, bk in by_key.items()}
        reply: Any = self._r.xread(streams, count=count)
        found: dict[BranchKey, list[PushNotice]] = {}
        for key, messages in reply or []:
            bk = by_key[key]
            self._cursor[bk] = messages[-1][0]
            found[bk] = [PushNotice.from_fields(fields) for _, fields in messages]
        return found

    def delivered_at(self, url: str) -> float | None:
        """When a receiver last took a verified delivery for the repository at ``url`` (P14),
        or None when none is recorded (no receiver, or none within the record's lifetime)."""
        value: Any = self._r.get(self._keys.delivered(url))
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None

    def forget(self, bk: BranchKey) -> None:
        """The branch is no longer ours."""
        self._cursor.pop(bk, None)
