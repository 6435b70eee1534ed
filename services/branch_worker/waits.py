"""Attribution waits (P5, P6, N5): an event is applied only once the audit fact of its edit has
joined it or its grace has run out; until then it, and every event after it, wait in the
backlog (stream order holds) and the branch's windows stay open.

The joining itself is the ``Attributor``'s (``attribution.py``); this part turns its answers
into the owner's: an author, a submitter, or ``AwaitFact``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Protocol

from services.branch_worker.attribution import Wait
from shared.model.attribution import Author
from shared.model.commit_requests import RESOLVED, UNATTRIBUTED, UNRESOLVED, CommitRequestItem
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.store.streams import StreamEntry


class AwaitFact(Exception):
    """The event's audit fact may still arrive: leave it, and what follows, for a later pass."""


class Attribution(Protocol):
    """Joins a branch's events to the audit facts of their edits (``Attributor``)."""

    def seen(self, backlog: Iterable[StreamEntry]) -> None: ...

    def new_pass(self) -> None: ...

    def author(
        self, target: TargetConfig, entry_id: str, event: ObjectEvent
    ) -> Author | Wait | None: ...

    def submitter(
        self, target: TargetConfig, entry_id: str, request: CommitRequestItem
    ) -> Author | Wait | None: ...

    def writer(self, target: TargetConfig, event: ObjectEvent) -> str | None: ...

    def waiting_until(self) -> float | None: ...

    def clear_waits(self) -> None: ...


class FactWaits:
    """One owner's waits for the audit facts of its branch's events."""

    def __init__(self, attributor: Attribution, clock: Callable[[], float]) -> None:
        self._attributor = attributor
        self._clock = clock
        #: Entries admitted by the apply window whose fact is awaited (see ``author``).
        self._awaiting: set[str] = set()

    def new_pass(self, backlog: Iterable[StreamEntry]) -> None:
        """A pass over ``backlog`` starts: an event's grace starts when it is first seen (N5),
        and the fact streams are read again (once each)."""
        self._attributor.seen(backlog)
        self._attributor.new_pass()

    def settled(self) -> None:
        """A pass applied every event it took: nothing waits for a fact now."""
        self._attributor.clear_waits()
        self._awaiting.clear()

    def judged(self, entry_id: str) -> bool:
        """Whether the apply window admitted the entry before its fact was waited for."""
        return entry_id in self._awaiting

    def author(self, target: TargetConfig, entry: StreamEntry, event: ObjectEvent) -> Author | None:
        """Who made the edit (None: attribution is off); AwaitFact while its fact may come."""
        if not target.audit_route or entry.listing is not None:
            return None  # a missed delete found by a listing is the product's own repair
        found = self._attributor.author(target, entry.entry_id, event)
        if isinstance(found, Wait):
            self._awaiting.add(entry.entry_id)  # judged by the apply window once, not per pass
            raise AwaitFact
        self._awaiting.discard(entry.entry_id)
        return found

    def tie_writer(
        self, target: TargetConfig, entry: StreamEntry, event: ObjectEvent
    ) -> str | None:
        """W2: for a same-second tie, the user the audit fact of this very write names, once
        its fact was waited for (AwaitFact meanwhile); None when attribution is off or no
        fact names this write."""
        if not target.audit_route or entry.listing is not None:
            return None
        self.author(target, entry, event)
        return self._attributor.writer(target, event)

    def submitter(
        self, target: TargetConfig | None, entry: StreamEntry, request: CommitRequestItem
    ) -> CommitRequestItem:
        """P5, P6: the request with its submitter, when its GitTarget has attribution (else as
        it came); AwaitFact while the audit fact of its create may come (stream order holds,
        and the window it would close stays open with it)."""
        if target is None or not target.audit_route:
            return request
        found = self._attributor.submitter(target, entry.entry_id, request)
        if isinstance(found, Wait):
            raise AwaitFact
        if found is None:
            return request
        if found.outcome == "resolved" and found.username:
            return replace(request, author=found.username, attribution=RESOLVED)
        return replace(request, author=UNATTRIBUTED, attribution=UNRESOLVED)

    def until(self) -> float | None:
        """While an event waits for its fact: when its grace ends (windows stay open)."""
        until = self._attributor.waiting_until()
        return until if until is not None and until > self._clock() else None
