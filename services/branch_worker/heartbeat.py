"""The branch worker's heartbeat: renews every held lease on its own schedule (Q1).

Work on a branch (a fetch, a push to a slow remote, a replay) can take seconds, and a worker
with many busy branches can spend longer than a lease period working them. So renewal does not
wait for work: a thread of its own renews every held lease, and the worker's entry in the
registry, every third of a lease period, whatever the branches' threads are doing. A lease it
finds lost is marked; the scheduler drops that branch before giving it more work, and a pass
already running on it fails at its next fenced write (``FencedOff``). Its unacknowledged
events stay in the stream for the next owner (M8).

The fencing itself is unchanged: renewal only extends a lease whose value is still ours
(``Leases.renew_many``), and every owner write checks the token in Lua.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from shared.model.ids import BranchKey
from shared.store.errors import REDIS_DOWN
from shared.store.leases import Lease, Leases
from shared.store.workers import WorkerRegistry

log = logging.getLogger(__name__)


class HeldLeases:
    """The leases a worker holds, shared by its scheduler and its heartbeat thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[BranchKey, Lease] = {}
        self._lost: set[BranchKey] = set()

    def add(self, lease: Lease) -> None:
        """A lease just taken."""
        with self._lock:
            self._held[lease.branch] = lease
            self._lost.discard(lease.branch)

    def remove(self, bk: BranchKey) -> Lease | None:
        """Forget a branch (dropped, given back or retired); returns its lease if held."""
        with self._lock:
            self._lost.discard(bk)
            return self._held.pop(bk, None)

    def get(self, bk: BranchKey) -> Lease | None:
        """The lease held for the branch, if any."""
        with self._lock:
            return self._held.get(bk)

    def all(self) -> list[Lease]:
        """Every lease held and not known to be lost."""
        with self._lock:
            return [lease for bk, lease in self._held.items() if bk not in self._lost]

    def mark_lost(self, lease: Lease) -> None:
        """The lease expired or was taken: the branch must not be worked any more."""
        with self._lock:
            if self._held.get(lease.branch) == lease:
                self._lost.add(lease.branch)

    def lost(self) -> set[BranchKey]:
        """Branches whose lease the heartbeat found lost."""
        with self._lock:
            return set(self._lost)

    def is_lost(self, bk: BranchKey) -> bool:
        """Whether the branch's lease was found lost."""
        with self._lock:
            return bk in self._lost

    def __contains__(self, bk: object) -> bool:
        with self._lock:
            return bk in self._held

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


class Heartbeat:
    """Renews the registry entry and every held lease, every third of a lease period."""

    def __init__(
        self,
        leases: Leases,
        registry: WorkerRegistry,
        held: HeldLeases,
        worker_id: str,
        *,
        clock: Callable[[], float],
        lease_s: float,
    ) -> None:
        self._leases = leases
        self._registry = registry
        self._held = held
        self._worker = worker_id
        self._clock = clock
        self._lease_s = lease_s
        #: A third of a lease: two beats may be missed before a lease expires.
        self.interval_s = lease_s / 3
        #: Beats done so far (tests and the log read it).
        self.beats = 0
        #: What stopped the thread, if it failed (the scheduler re-raises it).
        self.error: BaseException | None = None
        #: When every held lease was last renewed (or the heartbeat started).
        self._renewed_at = clock()

    def beat(self) -> None:
        """One renewal of the registry entry and of every held lease."""
        self._registry.heartbeat(self._worker, self._clock(), self._lease_s)
        held = self._held.all()
        for lease, renewed in zip(held, self._leases.renew_many(held), strict=True):
            if not renewed:
                log.warning(
                    "lease of %s expired; dropping it", lease.branch, extra={"branch": lease.branch}
                )
                self._held.mark_lost(lease)
        self._renewed_at = self._clock()
        self.beats += 1

    def missed(self) -> None:
        """A beat failed because Redis is away (C9): keep beating; once a lease period has
        passed without a renewal, every held lease may have expired (or Redis came back
        empty), so each branch is dropped before more work and taken again afresh."""
        if self._clock() - self._renewed_at < self._lease_s:
            return
        for lease in self._held.all():
            log.warning(
                "lease of %s not renewed for a lease period (Redis away); dropping it",
                lease.branch,
                extra={"branch": lease.branch},
            )
            self._held.mark_lost(lease)

    def renewal_problem(self) -> str | None:
        """None while the leases are renewed on time, else why not: the branch worker's
        readiness (issue 13). Two beats missed in a row means one more miss may lose every
        lease, so the worker stops counting as ready then, before its branches move."""
        if self.error is not None:
            return f"the lease heartbeat stopped ({type(self.error).__name__})"
        late = self._clock() - self._renewed_at
        if late > 2 * self.interval_s:
            return f"leases not renewed for {late:.0f}s (lease period {self._lease_s:g}s)"
        return None

    def run(self, stop: threading.Event) -> None:
        """Beat until ``stop`` is set. Redis away is ridden out (``missed``: a worker that
        cannot renew drops its branches after a lease period); any other failure is kept in
        ``error`` for the scheduler, which stops the process."""
        try:
            while not stop.wait(self.interval_s):
                try:
                    self.beat()
                except REDIS_DOWN as err:
                    log.warning("heartbeat: Redis unreachable (%s); trying again", err)
                    self.missed()
        except Exception as err:  # re-raised by the scheduler's thread
            log.exception("heartbeat failed")
            self.error = err
