"""When a branch's owner must act although nothing arrives (Q2, Q7, P6, N5): a window closes
(its quiet period or ``max_window``, or a CommitRequest's close), held writes are tried again,
an applier's wait ends, a bound request becomes overdue, an idle branch's steady tick comes,
or events wait in the backlog.

While an event waits for its audit fact the windows stay open until its grace ends (a window
closed meanwhile would be committed without it).
"""

from __future__ import annotations

from collections.abc import Callable

from services.branch_worker.applying import ApplierDesk
from services.branch_worker.backlog import Backlog
from services.branch_worker.commit_requests import Requests
from services.branch_worker.holds import Holds, Parking
from services.branch_worker.tips import Tips
from services.branch_worker.waits import FactWaits
from services.branch_worker.windows import OpenWindow
from shared.decide.window import closes_at, is_due
from shared.model.config import BranchConfig
from shared.model.ids import GitTargetUid


class Deadlines:
    """One owner's times to act."""

    def __init__(
        self,
        config: BranchConfig,
        max_window: float,
        clock: Callable[[], float],
        *,
        open_windows: dict[GitTargetUid, OpenWindow],
        backlog: Backlog,
        waits: FactWaits,
        holds: Holds,
        parking: Parking,
        tips: Tips,
        desk: ApplierDesk,
        requests: Requests,
    ) -> None:
        self._config = config
        self._max_window = max_window  # Settings.max_window: a process setting, not a CRD's
        self._clock = clock
        self._open = open_windows
        self._backlog = backlog
        self._waits = waits
        self._holds = holds
        self._parking = parking
        self._tips = tips
        self._desk = desk
        self._requests = requests

    def due_windows(self, now: float, force: bool) -> list[GitTargetUid]:
        """The GitTargets whose open window closes now (all when ``force``): its quiet period
        or ``max_window`` is over (not while an event waits for its fact), or a CommitRequest
        bound to it asks for its close (P6)."""
        c = self._config
        deferred = not force and self._waits.until() is not None
        return [
            uid
            for uid, w in self._open.items()
            if force
            or (not deferred and is_due(w.window, now, w.target.window_s(c), self._max_window))
            or (w.deadline is not None and now >= w.deadline)  # P6: a request's close
        ]

    def next(self, busy: bool) -> float | None:
        """The earliest time to act (None: only an arrival wakes the owner); ``busy``: the
        branch holds something unapplied, open, held or unpushed (no steady tick then)."""
        c = self._config
        awaiting = self._waits.until()
        times = [
            closes_at(w.window, w.target.window_s(c), self._max_window) for w in self._open.values()
        ]
        times.extend(w.deadline for w in self._open.values() if w.deadline is not None)
        if awaiting is not None:  # closes are deferred until the grace ends
            times = [max(t, awaiting) for t in times]
        times.extend(self._holds.retry_times())
        if self._parking.retry_at is not None:
            times.append(self._parking.retry_at)
        if not busy:
            times.append(self._tips.next_read())
        if self._desk.next_wake is not None:
            times.append(self._desk.next_wake)
        if (failure := self._requests.next_failure()) is not None:
            times.append(failure)  # P6: FinalizeFailed is reported on time
        if self._backlog:  # more events to apply: wake again at once (or when a grace ends;
            # the pass every RETRY_S meanwhile looks for the fact)
            times.append(awaiting if awaiting is not None else self._clock())
        return min(times) if times else None
