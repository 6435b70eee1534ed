"""When each Flux object is next due: at once (woken by an event) or at its interval.

This is the doubles' work queue. A wake marks an object due now; a reconcile ends by setting
the object's next due time (``spec.interval`` after success, a retry interval after a failure,
nothing while suspended), as controller-runtime's ``RequeueAfter`` does. A wake that arrives
while the object is being reconciled is kept, so the object runs again afterwards (the
workqueue's dirty set). The background worker blocks on a condition variable until the
earliest due time or the next wake; ``pop_due`` serves the deterministic ``reconcile_due``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from sandbox.flux.triggers import ObjectKey


class Schedule:
    """Due times and pending wakes per object, safe to use from several threads."""

    def __init__(self) -> None:
        self._due: dict[ObjectKey, float] = {}
        self._woken: set[ObjectKey] = set()
        self._closed = False
        self._changed = threading.Condition()

    def wake(self, key: ObjectKey) -> None:
        """Make ``key`` due at once."""
        with self._changed:
            self._woken.add(key)
            self._changed.notify_all()

    def due_at(self, key: ObjectKey, when: float | None) -> None:
        """Make ``key`` due at ``when`` (None: only an event will wake it again)."""
        with self._changed:
            if when is None:
                self._due.pop(key, None)
            else:
                self._due[key] = when
            self._changed.notify_all()

    def forget(self, key: ObjectKey) -> None:
        """Drop ``key`` (the object is gone)."""
        with self._changed:
            self._due.pop(key, None)
            self._woken.discard(key)

    def pop_due(self, now: float) -> list[ObjectKey]:
        """The objects due at ``now``, in a stable order; their wakes and due times are cleared."""
        with self._changed:
            return self._take(now)

    def wait_due(self, clock: Callable[[], float]) -> list[ObjectKey]:
        """Block until something is due (then pop it) or ``close()``; [] once closed."""
        with self._changed:
            while not self._closed:
                due = self._take(clock())
                if due:
                    return due
                timeout = min(self._due.values()) - clock() if self._due else None
                self._changed.wait(timeout)
            return []

    def close(self) -> None:
        """Release every ``wait_due`` caller."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _take(self, now: float) -> list[ObjectKey]:
        due = self._woken | {key for key, when in self._due.items() if when <= now}
        self._woken.clear()
        for key in due:
            self._due.pop(key, None)
        return sorted(due)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one reconcile tells the schedule: requeue after some seconds, wait, or forget."""

    requeue_after: float | None  # None: only an event wakes the object again
    gone: bool = False  # the object no longer exists: drop it from the schedule
