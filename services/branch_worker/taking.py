"""Taking branches and giving them back: each worker's fair share (Q1, ``decide/shares.py``).

The scheduler (``worker.py``) calls ``_acquire_if_due`` once a round: every
``ACQUIRE_EVERY_S`` it counts the live workers and the listed branches, gives idle branches
over its share back to siblings, and takes listed branches while it has room. A branch listed
without settings or GitTargets is not started; once that has lasted the grace it is retired
(``orphans.py``). Only the scheduler's thread runs these methods.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future

from services.branch_worker.branch import BranchLoop
from services.branch_worker.heartbeat import HeldLeases
from services.branch_worker.jobs import BranchJobs, Result
from services.branch_worker.orphans import Orphans
from services.branch_worker.stores import Stores
from shared.decide.shares import excess, room_for
from shared.model.ids import BranchKey
from shared.settings import Settings

log = logging.getLogger("services.branch_worker.worker")  # one logger for the scheduler

#: How often the scheduler looks for branches to take: often enough that a new branch or a dead
#: worker's branch is taken well within a lease period, rarely enough to cost little.
ACQUIRE_EVERY_S = 1.0
#: How long a worker leaves a branch whose work failed before it tries to take it again.
RETAKE_PAUSE_S = 5.0


class Taking:
    """The share-keeping half of ``BranchWorker`` (its state lives on the worker)."""

    settings: Settings
    stores: Stores
    worker_id: str
    jobs: BranchJobs
    held: HeldLeases
    orphans: Orphans
    loops: dict[BranchKey, BranchLoop]
    _clock: Callable[[], float]
    _lease_s: float
    _inflight: dict[BranchKey, Future[Result]]
    _paused_until: dict[BranchKey, float]
    _acquired_at: float | None

    def _submit(self, bk: BranchKey, job: Callable[..., Result], *args: object) -> None:
        raise NotImplementedError

    def _drop(self, bk: BranchKey) -> None:
        raise NotImplementedError

    def _acquire_if_due(self) -> None:
        now = self._clock()
        if self._acquired_at is not None and now - self._acquired_at < ACQUIRE_EVERY_S:
            return
        self._acquired_at = now
        alive = self.stores.registry.alive(now, self._lease_s)
        branches = self.stores.registry.branches()
        capacity = self.settings.max_branches
        self._shed(excess(len(branches), alive, capacity, len(self.held)))
        room = room_for(len(branches), alive, capacity, len(self.held))
        for bk in branches:
            if room <= 0:
                return
            if bk not in self.held and self._try_take(bk, now):
                room -= 1

    def _shed(self, count: int) -> None:
        """Give ``count`` branches back to siblings: only idle ones (no pass out, nothing open
        or unpushed), so every event they read is acknowledged already and the next owner
        reads the rest (M8)."""
        idle = [
            bk
            for bk in sorted(self.loops, reverse=True)
            if bk not in self._inflight and not self.loops[bk].busy()
        ]
        for bk in idle[: max(count, 0)]:
            lease = self.held.get(bk)
            self._drop(bk)
            if lease is not None:
                self.stores.leases.release(lease)
            log.info("gave branch %s back: over this worker's share", bk, extra={"branch": bk})

    def _try_take(self, bk: BranchKey, now: float) -> bool:
        if self._paused_until.get(bk, 0.0) > now:
            return False
        config = self.stores.configs.branch(bk)
        if config is None or not self.stores.configs.has_targets(bk):
            # not published (yet?), or no GitTarget writes to it any more: starting it would
            # only fail again if its remote is gone (U1), so it is retired after the grace
            if self.orphans.unconfigured(bk):
                self._retire_unconfigured(bk)
            return False
        self.orphans.forget(bk)
        lease = self.stores.leases.acquire(bk, self.worker_id)
        if lease is None:
            return False
        self.held.add(lease)
        self._submit(bk, self.jobs.start, bk, config, lease)
        return True

    def _retire_unconfigured(self, bk: BranchKey) -> None:
        """A branch listed without settings or GitTargets for the grace, not started here:
        retired, if no GitTarget is registered with it (settings and GitTargets are published
        together)."""
        lease = self.stores.leases.acquire(bk, self.worker_id)
        if lease is None:
            return
        if self.stores.registry.retire(lease):
            log.info("retired branch %s: no settings or GitTarget", bk, extra={"branch": bk})
            self.orphans.forget(bk)
        else:
            self.stores.leases.release(lease)
