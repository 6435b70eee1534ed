"""Each applier's obligations, attempt out and backoff (A1-A5), kept in ``applier:{ak}``.

Updates are read-modify-write under WATCH, so two workers of sibling branches sharing one
Kustomization (A3) never lose each other's obligations. The record is
``shared.model.appliers.Applier`` in its own JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import redis

from shared.model.appliers import Applier, ApplierKind
from shared.model.ids import ApplierKey, BranchKey
from shared.store.keys import Keys

T = TypeVar("T")

#: One step of an update: the next record, and what the caller wants to know about it (the
#: decision taken). It may run more than once (WATCH retries), so it must be pure.
Step = Callable[[Applier], tuple[Applier, T]]


class ApplierStore:
    """Load and atomically update appliers."""

    def __init__(self, client: redis.Redis, keys: Keys) -> None:
        self._r = client
        self._keys = keys

    def track(self, bk: BranchKey, ak: ApplierKey) -> None:
        """Note that the branch's owners keep obligations in the applier, so that retiring the
        branch removes its record too (``WorkerRegistry.retire``)."""
        self._r.sadd(self._keys.branch_appliers(bk), ak)

    def load(self, ak: ApplierKey, kind: ApplierKind) -> Applier:
        """The applier's record, or an empty one."""
        text = self._r.get(self._keys.applier(ak))
        return Applier.from_json(str(text)) if text else Applier(kind)

    def update(self, ak: ApplierKey, kind: ApplierKind, step: Step[T]) -> tuple[Applier, T]:
        """Run ``step`` on the stored record atomically; returns the new record and what the
        step returned from the run that was committed.

        A record the step leaves unchanged is not written again (most wakes decide to wait);
        one that holds nothing worth keeping is deleted, so no TTL is needed.
        """
        key = self._keys.applier(ak)
        with self._r.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)  # type: ignore[no-untyped-call]
                    text = pipe.get(key)
                    current = Applier.from_json(str(text)) if text else Applier(kind)
                    new, result = step(current)
                    kept = new if new.worth_keeping() else None
                    if kept != (current if text else None):
                        pipe.multi()
                        if kept is None:
                            pipe.delete(key)
                        else:
                            pipe.set(key, kept.to_json())
                        pipe.execute()
                    return new, result  # leaving the block UNWATCHes an unwritten key
                except redis.WatchError:
                    continue

    def amend(
        self, ak: ApplierKey, kind: ApplierKind, change: Callable[[Applier], Applier]
    ) -> Applier:
        """``update`` for a change that decides nothing (a new obligation, a cancelled one)."""
        new, _ = self.update(ak, kind, lambda applier: (change(applier), None))
        return new
