"""The branch owner's side of the notices stream: read the hints that arrived since last time.

Notices are hints (R4, Q5), so there is no consumer group: the owner remembers the last id it
read, and a new owner starts from the end of the stream, since it reads the tip when it takes
the branch anyway.
"""

from __future__ import annotations

from typing import Any

import redis

from shared.model.ids import BranchKey
from shared.model.notices import PushNotice
from shared.store.keys import Keys


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

    def read(self, bk: BranchKey, count: int = 100) -> list[PushNotice]:
        """Notices that arrived since the last read."""
        key = self._keys.branch_notices(bk)
        reply: Any = self._r.xread({key: self._cursor.get(bk, "0-0")}, count=count)
        if not reply:
            return []
        messages = reply[0][1]
        self._cursor[bk] = messages[-1][0]
        return [PushNotice.from_fields(fields) for _, fields in messages]

    def forget(self, bk: BranchKey) -> None:
        """The branch is no longer ours."""
        self._cursor.pop(bk, None)
