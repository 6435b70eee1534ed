"""Taking branches and giving them back: each worker's fair share (Q1, ``decide/shares.py``).

The scheduler (``worker.py``) calls ``Taking.acquire_if_due`` once a round: every
``ACQUIRE_EVERY_S`` it counts the live workers and the listed branches, gives idle branches
over its share back to siblings, and takes listed branches nobody holds (their leases read in
one MGET) while it has room. A branch listed
without settings or GitTargets is not started; once that has lasted the grace it is retired
(``orphans.py``). Only the scheduler's thread runs these methods.

The worker's bookkeeping of owned branches (its loops, the jobs out, the retake pauses) is
shared with this part by reference: the worker starts and drops branches, this part decides
which.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future

from services.branch_worker.branch import BranchLoop
from services.branch_worker.heartbeat import HeldLeases
from services.branch_worker.jobs import Result
from services.branch_worker.orphans import Orphans
from services.branch_worker.stores import Stores
from shared.decide.shares import excess, room_for
from shared.model.config import BranchConfig
from shared.model.ids import BranchKey
from shared.settings import Settings
from shared.store.leases import Lease

log = logging.getLogger("services.branch_worker.worker")  # one logger for the scheduler

#: How often the scheduler looks for branches to take: often enough that a new branch or a dead
#: worker's branch is taken well within a lease period, rarely enough to cost little.
ACQUIRE_EVERY_S = 1.0
#: How long a worker leaves a branch whose work failed before it tries to take it again.
RETAKE_PAUSE_S = 5.0

#: Starts a branch just leased (hands its start to the worker's pool).
Start = Callable[[BranchKey, BranchConfig, Lease], None]
#: Forgets a branch the worker no longer owns.
Drop = Callable[[BranchKey], None]


class Taking:
    """The share-keeping part of ``BranchWorker``."""

    def __init__(
        self,
        stores: Stores,
        worker_id: str,
        clock: Callable[[], float],
        *,
        settings: Settings,
        lease_s: float,
        held: HeldLeases,
        orphans: Orphans,
        loops: Mapping[BranchKey, BranchLoop],
        inflight: Mapping[BranchKey, Future[Result]],
        paused_until: Mapping[BranchKey, float],
        start: Start,
        drop: Drop,
    ) -> None:
        self._stores = stores
        self._worker_id = worker_id
        self._clock = clock
        self._lease_s = lease_s
        self._settings = settings
        self._held = held
        self._orphans = orphans
        self._loops = loops
        self._inflight = inflight
        self._paused_until = paused_until
        self._start = start
        self._drop = drop
        self._acquired_at: float | None = None

    def acquire_if_due(self) -> None:
        """Every ``ACQUIRE_EVERY_S``: give back what is over this worker's share, take what
        fits in it."""
        now = self._clock()
        if self._acquired_at is not None and now - self._acquired_at < ACQUIRE_EVERY_S:
            return
        self._acquired_at = now
        alive = self._stores.registry.alive(now, self._lease_s)
        branches = self._stores.registry.branches()
        capacity = self._settings.max_branches
        self._shed(excess(len(branches), alive, capacity, len(self._held)))
        room = room_for(len(branches), alive, capacity, len(self._held))
        if room <= 0:
            return
        others = [bk for bk in branches if bk not in self._held]
        # one MGET of their leases, so a branch a sibling holds costs no command of its own
        # each round (its settings and GitTargets were read every second, per worker)
        holders = self._stores.leases.holders(others)
        free = [bk for bk, holder in zip(others, holders, strict=True) if not holder]
        for bk in free:
            if room <= 0:
                return
            if self._try_take(bk, now):
                room -= 1

    def _shed(self, count: int) -> None:
        """Give ``count`` branches back to siblings: only idle ones (no pass out, nothing open
        or unpushed), so every event they read is acknowledged already and the next owner
        reads the rest (M8)."""
        idle = [
            bk
            for bk in sorted(self._loops, reverse=True)
            if bk not in self._inflight and not self._loops[bk].busy()
        ]
        for bk in idle[: max(count, 0)]:
            lease = self._held.get(bk)
            self._drop(bk)
            if lease is not None:
                self._stores.leases.release(lease)
            log.info("gave branch %s back: over this worker's share", bk, extra={"branch": bk})

    def _try_take(self, bk: BranchKey, now: float) -> bool:
        if self._paused_until.get(bk, 0.0) > now:
            return False
        config = self._stores.configs.branch(bk)
        if config is None or not self._stores.configs.has_targets(bk):
            # not published (yet?), or no GitTarget writes to it any more: starting it would
            # only fail again if its remote is gone (U1), so it is retired after the grace
            if self._orphans.unconfigured(bk):
                self._retire_unconfigured(bk)
            return False
        self._orphans.forget(bk)
        lease = self._stores.leases.acquire(bk, self._worker_id)
        if lease is None:
            return False
        self._held.add(lease)
        self._start(bk, config, lease)
        return True

    def _retire_unconfigured(self, bk: BranchKey) -> None:
        """A branch listed without settings or GitTargets for the grace, not started here:
        retired, if no GitTarget is registered with it (settings and GitTargets are published
        together)."""
        lease = self._stores.leases.acquire(bk, self._worker_id)
        if lease is None:
            return
        if self._stores.registry.retire(lease):
            log.info("retired branch %s: no settings or GitTarget", bk, extra={"branch": bk})
            self._orphans.forget(bk)
        else:
            self._stores.leases.release(lease)
