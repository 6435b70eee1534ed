"""The branch-worker process: share the branches by lease, and run each owned branch.

Live workers heartbeat in Redis; each takes at most its fair share of the branches (rounded
up), so two workers split twenty branches ten and ten, and a dead worker's branches are taken
over by the others once its leases expire (Q1).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from services.branch_worker.applying import ApplierDesk
from services.branch_worker.branch import BranchLoop
from shared.git.errors import GitError
from shared.git.remote import ls_remote
from shared.git.workspace import Workspace
from shared.kube.errors import KubeError
from shared.model.config import BranchConfig
from shared.model.ids import BranchKey
from shared.settings import Settings
from shared.store.appliers import ApplierStore
from shared.store.attempts import Attempts
from shared.store.branch_state import BranchStates, FencedOff
from shared.store.config import ConfigStore
from shared.store.connection import Client
from shared.store.keys import Keys
from shared.store.leases import Lease, Leases
from shared.store.notice_reader import NoticeReader
from shared.store.streams import EventStream
from shared.store.workers import WorkerRegistry

log = logging.getLogger(__name__)

#: Most events read from one branch in one wake: bounds the work between lease renewals.
READ_BATCH = 500
#: Longest wait between wakes when nothing happens: notices (a plain stream, which the blocking
#: group read cannot include) are read once per wake, so this bounds their latency.
IDLE_WAIT_S = 0.2

#: How long a worker leaves a branch whose work failed before it tries to take it again.
RETAKE_PAUSE_S = 5.0
#: Failures of one branch's work that give the branch back instead of stopping the process: the
#: remote or its credentials, the work tree's disk, the cluster holding a Secret.
BRANCH_FAILURES = (GitError, OSError, KubeError)

CredentialSource = Callable[[BranchKey], dict[str, str]]


def no_credentials(bk: BranchKey) -> dict[str, str]:
    """For remotes that need no credentials (the sandbox's git host without auth)."""
    return {}


@dataclass(frozen=True, slots=True)
class Stores:
    """The Redis adapters a worker uses."""

    events: EventStream
    states: BranchStates
    configs: ConfigStore
    leases: Leases
    registry: WorkerRegistry
    notices: NoticeReader
    appliers: ApplierStore
    attempts: Attempts

    @classmethod
    def build(cls, client: Client, settings: Settings) -> Stores:
        keys = Keys(settings.key_prefix)
        period_ms = int(settings.lease_period.total_seconds() * 1000)
        return cls(
            EventStream(client, keys),
            BranchStates(client, keys),
            ConfigStore(client, keys),
            Leases(client, keys, period_ms),
            WorkerRegistry(client, keys),
            NoticeReader(client, keys),
            ApplierStore(client, keys),
            Attempts(client, keys, settings.apply_queue),
        )


class BranchWorker:
    """One branch-worker process."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        worker_id: str,
        clock: Callable[[], float],
        credentials: CredentialSource = no_credentials,
    ) -> None:
        self.settings = settings
        self.stores = stores
        self.worker_id = worker_id
        self._clock = clock
        self._credentials = credentials
        self.loops: dict[BranchKey, BranchLoop] = {}
        self._lease_s = settings.lease_period.total_seconds()
        self._renewed_at = 0.0
        self._idle = threading.Event()  # never set: an interruptible wait while idle
        self._paused_until: dict[BranchKey, float] = {}

    def run(self, stop: threading.Event, burst: bool = False) -> None:
        """Work until ``stop`` is set; with ``burst``, until nothing is left to do."""
        try:
            while not stop.is_set():
                did_work = self.wake()
                if burst and not did_work and not any(lp.busy() for lp in self.loops.values()):
                    return
        finally:
            self.shutdown()

    def wake(self) -> bool:
        """One pass: leases, new events (blocking briefly), due windows. True if any were read."""
        self._maintain_leases()
        if not self.loops:
            self._idle.wait(IDLE_WAIT_S)  # nothing owned: wait for branches to appear
            return False
        block_ms = max(int(self._wait_time() * 1000), 1)
        batches = self.stores.events.read_many(
            list(self.loops), self.worker_id, READ_BATCH, block_ms
        )
        for bk, loop in list(self.loops.items()):
            try:
                loop.handle(batches.get(bk, []))
                loop.flush()
                loop.on_notices(self.stores.notices.read(bk))
                loop.tick()
                loop.apply_requests()
            except FencedOff:
                log.warning("lost branch %s to another worker", bk, extra={"branch": bk})
                self._drop(bk)
            except BRANCH_FAILURES:
                log.exception(
                    "branch %s failed; giving it back to start over", bk, extra={"branch": bk}
                )
                self._give_back(bk)
        return any(batches.values())

    def _drop(self, bk: BranchKey) -> None:
        self.loops.pop(bk, None)
        self.stores.notices.forget(bk)

    def _give_back(self, bk: BranchKey) -> None:
        """Release a branch whose work failed: whoever takes it next (maybe this worker, after
        a pause) claims its unacknowledged events and replays them on the remote tip (M8)."""
        loop = self.loops.get(bk)
        self._drop(bk)
        self._paused_until[bk] = self._clock() + RETAKE_PAUSE_S
        if loop is not None:
            self.stores.leases.release(loop.lease)

    def _wait_time(self) -> float:
        now = self._clock()
        deadlines = [d for lp in self.loops.values() if (d := lp.next_deadline()) is not None]
        wait = min([IDLE_WAIT_S, *(d - now for d in deadlines)])
        return max(wait, 0.0)

    def _maintain_leases(self) -> None:
        now = self._clock()
        if now - self._renewed_at < self._lease_s / 3 and self._renewed_at:
            self._acquire(now)
            return
        self._renewed_at = now
        for bk, loop in list(self.loops.items()):
            if not self.stores.leases.renew(loop.lease):
                log.warning("lease of %s expired; dropping it", bk, extra={"branch": bk})
                self.loops.pop(bk)
        self._acquire(now)

    def _acquire(self, now: float) -> None:
        alive = self.stores.registry.heartbeat(self.worker_id, now, self._lease_s)
        branches = self.stores.registry.branches()
        share = math.ceil(len(branches) / max(alive, 1))
        for bk in branches:
            if len(self.loops) >= share:
                return
            if bk not in self.loops:
                self._try_take(bk)

    def _try_take(self, bk: BranchKey) -> None:
        if self._paused_until.get(bk, 0.0) > self._clock():
            return
        config = self.stores.configs.branch(bk)
        if config is None:
            return  # the watcher has not published this branch's GitProvider yet
        lease = self.stores.leases.acquire(bk, self.worker_id)
        if lease is None:
            return
        try:
            self._start(bk, config, lease)
        except BRANCH_FAILURES:
            log.exception("cannot start branch %s; giving it back", bk, extra={"branch": bk})
            self._paused_until[bk] = self._clock() + RETAKE_PAUSE_S
            self.stores.leases.release(lease)

    def _start(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> None:
        env = self._credentials(bk)
        workspace = Workspace(
            Path(self.settings.work_dir) / self.worker_id / bk,
            config.url,
            config.branch,
            env=env,
        )
        loop = BranchLoop(
            lease,
            config,
            workspace,
            events=self.stores.events,
            states=self.stores.states,
            configs=self.stores.configs,
            clock=self._clock,
            worker_id=self.worker_id,
            read_tip=lambda: ls_remote(config.url, config.branch, env),
            steady_tick=self.settings.steady_tick.total_seconds(),
            max_window=self.settings.max_window.total_seconds(),
            desk=ApplierDesk(
                bk,
                config,
                configs=self.stores.configs,
                appliers=self.stores.appliers,
                attempts=self.stores.attempts,
                states=self.stores.states,
                clock=self._clock,
                attempt_deadline_s=self.settings.attempt_deadline.total_seconds(),
            ),
        )
        self.stores.notices.start(bk)
        loop.start()
        self.loops[bk] = loop
        log.info("took branch %s (token %d)", bk, lease.token, extra={"branch": bk})

    def shutdown(self) -> None:
        """Publish what is open, give the branches back, and leave the registry."""
        for bk, loop in list(self.loops.items()):
            try:
                loop.flush(force=True)
            except FencedOff:
                log.warning("branch %s was taken over during shutdown", bk, extra={"branch": bk})
            self.stores.leases.release(loop.lease)
        self.loops.clear()
        self.stores.registry.leave(self.worker_id)
