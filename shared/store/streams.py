"""The per-branch stream of object events, read by the branch's owner in a consumer group.

An event is acknowledged only after the push that holds its write (M8), so a worker that dies
mid-window leaves its events pending, and the next owner claims every pending entry before it
reads new ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis

from shared.model.events import ObjectEvent
from shared.model.ids import BranchKey
from shared.store.keys import Keys

#: The one consumer group per events stream: the branch's owners, one at a time.
GROUP = "owners"


@dataclass(frozen=True, slots=True)
class StreamEntry:
    """An event with its stream id, needed to acknowledge it."""

    entry_id: str
    event: ObjectEvent | None  # None when the entry could not be decoded (kept for the ack)


class EventStream:
    """Publish, read, claim and acknowledge object events of one branch."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def publish(self, bk: BranchKey, event: ObjectEvent) -> str:
        """Append an event and register the branch; returns the stream id."""
        pipe = self._r.pipeline(transaction=True)
        pipe.xadd(self._keys.branch_events(bk), event.to_fields())  # type: ignore[arg-type]
        pipe.sadd(self._keys.branches, bk)
        entry_id, _ = pipe.execute()
        return str(entry_id)

    def publish_many(self, bk: BranchKey, events: Sequence[ObjectEvent]) -> None:
        """Append events in order in one round trip and register the branch.

        A relist publishes every object of a watch; one round trip each made the watcher's
        side of a snapshot of 10,000 objects mostly waiting on Redis. The caller moves its
        cursor only after this returns, so a crash midway replays rather than loses (M1).
        """
        if not events:
            return
        key = self._keys.branch_events(bk)
        pipe = self._r.pipeline(transaction=False)
        for event in events:
            pipe.xadd(key, event.to_fields())  # type: ignore[arg-type]
        pipe.sadd(self._keys.branches, bk)
        pipe.execute()

    def ensure_group(self, bk: BranchKey) -> None:
        """Create the consumer group (from the start of the stream) if it is missing."""
        try:
            self._r.xgroup_create(self._keys.branch_events(bk), GROUP, id="0", mkstream=True)
        except redis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    def claim_pending(self, bk: BranchKey, consumer: str) -> list[StreamEntry]:
        """Take over every entry a previous owner read but did not acknowledge."""
        key, start = self._keys.branch_events(bk), "0-0"
        taken: list[StreamEntry] = []
        while True:
            reply: Any = self._r.xautoclaim(key, GROUP, consumer, 0, start, count=500)
            start, messages = reply[0], reply[1]
            taken.extend(_decode(messages))
            if start == "0-0":
                return taken

    def read(
        self, bk: BranchKey, consumer: str, count: int, block_ms: int | None
    ) -> list[StreamEntry]:
        """New entries for this consumer (blocks up to ``block_ms`` when given)."""
        key = self._keys.branch_events(bk)
        reply: Any = self._r.xreadgroup(GROUP, consumer, {key: ">"}, count=count, block=block_ms)
        if not reply:
            return []
        return _decode(reply[0][1])

    def read_many(
        self, bks: Sequence[BranchKey], consumer: str, count: int, block_ms: int | None
    ) -> dict[BranchKey, list[StreamEntry]]:
        """New entries of several branches in one call, blocking until any has some."""
        if not bks:
            return {}
        by_key = {self._keys.branch_events(bk): bk for bk in bks}
        streams: dict[Any, Any] = dict.fromkeys(by_key, ">")
        reply: Any = self._r.xreadgroup(GROUP, consumer, streams, count=count, block=block_ms)
        return {by_key[key]: _decode(messages) for key, messages in reply or []}

    def ack(self, bk: BranchKey, entry_ids: Sequence[str]) -> None:
        """Acknowledge and delete entries whose writes are pushed (or that hold no write)."""
        if not entry_ids:
            return
        key = self._keys.branch_events(bk)
        pipe = self._r.pipeline(transaction=True)
        pipe.xack(key, GROUP, *entry_ids)
        pipe.xdel(key, *entry_ids)
        pipe.execute()

    def pending_count(self, bk: BranchKey) -> int:
        """Entries read but not yet acknowledged, plus those not yet read."""
        key = self._keys.branch_events(bk)
        return int(self._r.xlen(key))


def _decode(messages: Any) -> list[StreamEntry]:
    entries = []
    for entry_id, fields in messages:
        try:
            event: ObjectEvent | None = ObjectEvent.from_fields(fields)
        except ValueError:
            event = None
        entries.append(StreamEntry(entry_id, event))
    return entries
