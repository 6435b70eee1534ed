"""A branch's backlog: the events its owner read or claimed but has not applied yet, oldest
first, worked in slices (Q1, M8).

What a new owner claims (a whole snapshot, maybe) is applied ``SLICE`` events per wake, so the
worker renews its leases between slices instead of losing the branch mid-claim and replaying
it again. Events that must wait (an audit fact still due, a parked GitTarget's events handled
again) go back to the front, so stream order holds.
"""

from __future__ import annotations

from collections.abc import Iterator

from shared.store.streams import StreamEntry

#: Most events applied in one ``handle``: the rest wait for the next wake.
SLICE = 500


class Backlog:
    """The unapplied events of one branch, in stream order."""

    def __init__(self) -> None:
        self._entries: list[StreamEntry] = []

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __iter__(self) -> Iterator[StreamEntry]:
        return iter(self._entries)

    def reset(self, entries: list[StreamEntry]) -> None:
        """The events a new owner claimed: the backlog is these, in stream order."""
        self._entries = list(entries)

    def extend(self, entries: list[StreamEntry]) -> None:
        """New events, after every one already waiting."""
        self._entries.extend(entries)

    def put_back(self, entries: list[StreamEntry]) -> None:
        """Events handled again (or left for later), before every one waiting."""
        self._entries[:0] = entries

    def next_slice(self) -> list[StreamEntry]:
        """The oldest ``SLICE`` events, out of the backlog."""
        batch, self._entries = self._entries[:SLICE], self._entries[SLICE:]
        return batch
