"""What the Flux doubles did, in order, for tests to read and await.

Each reconcile leaves one ``Record``: which object, what happened (a fetch, an up-to-date
check, an apply, a failure, a suspended no-op), at which revision and at what ``clock()``
time, with the per-object changes of an apply. ``ActivityLog.wait_for`` blocks on a
condition variable until a matching record arrives, so a test can await "Kustomization X
applied revision R" without polling or sleeping.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

GIT_REPOSITORY = "GitRepository"
KUSTOMIZATION = "Kustomization"

# Actions of the source-controller double.
FETCHED = "fetched"  # a new commit was fetched and a new artifact stored
UP_TO_DATE = "up-to-date"  # the remote ref still points at the stored artifact's commit
# Actions of the kustomize-controller double.
APPLIED = "applied"  # the reconcile finished with Ready=True at ``revision``
# Actions of both.
FAILED = "failed"
SUSPENDED = "suspended"  # woken while spec.suspend is true: nothing fetched or applied


@dataclass(frozen=True, slots=True)
class Record:
    """One reconcile of one object."""

    kind: str
    namespace: str
    name: str
    action: str
    revision: str
    time: float
    changes: tuple[str, ...] = ()
    message: str = ""

    def is_for(self, kind: str, namespace: str, name: str) -> bool:
        """Whether this record is about the object ``kind`` ``namespace/name``."""
        return (self.kind, self.namespace, self.name) == (kind, namespace, name)


class ActivityLog:
    """An append-only, thread-safe list of records with a blocking ``wait_for``."""

    def __init__(self) -> None:
        self._records: list[Record] = []
        self._changed = threading.Condition()

    def add(self, record: Record) -> None:
        """Append ``record`` and wake every waiter."""
        with self._changed:
            self._records.append(record)
            self._changed.notify_all()

    def records(self, since: int = 0) -> list[Record]:
        """Every record from position ``since`` on."""
        with self._changed:
            return self._records[since:]

    def mark(self) -> int:
        """The current position: pass it as ``since`` to look only at what comes later."""
        with self._changed:
            return len(self._records)

    def wait_for(
        self, predicate: Callable[[Record], bool], timeout: float, since: int = 0
    ) -> Record:
        """The first record from ``since`` on that matches; TimeoutError after ``timeout`` s."""
        found: list[Record] = []

        def matched() -> bool:
            found[:] = [r for r in self._records[since:] if predicate(r)][:1]
            return bool(found)

        with self._changed:
            if not self._changed.wait_for(matched, timeout):
                raise TimeoutError(f"no matching Flux activity within {timeout}s")
        return found[0]

    def wait_applied(
        self, namespace: str, name: str, revision: str, timeout: float, since: int = 0
    ) -> Record:
        """Await "Kustomization ``namespace/name`` applied ``revision``"."""
        return self.wait_for(
            lambda r: (
                r.is_for(KUSTOMIZATION, namespace, name)
                and r.action == APPLIED
                and r.revision == revision
            ),
            timeout,
            since,
        )
