"""The branch-worker process: share the branches by lease, and work each owned branch.

Three kinds of thread, so that no branch's work can hold up another's or the leases (Q1):

- the scheduler (the thread that calls ``run``) takes branches, reads their new events in one
  blocking read, and hands each branch's pass (events, due windows, push, notices, tick,
  requests) to the pool; all bookkeeping of owned branches happens on this thread;
- a bounded pool (``Settings.branch_threads``) runs the passes and the start of newly taken
  branches; a branch is never in the pool twice, so each branch's work stays serial, while a
  slow remote occupies one thread and the other branches go on;
- the heartbeat (``heartbeat.py``) renews the registry entry and every held lease on its own
  schedule; a lease it finds lost is dropped before its branch gets more work.

Live workers heartbeat in Redis; each takes at most its fair share of the branches, capped by
``Settings.max_branches`` (``shared.decide.shares``), so two workers split twenty branches ten
and ten, a dead worker's branches are taken over by the others once its leases expire, and a
worker never owns more branches than it can serve. A branch no GitTarget writes to any more is
retired by its owner (``WorkerRegistry.retire``): its keys go and nobody leases it again.
"""

from __future__ import annotations

import logging
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from services.branch_worker.applying import ApplierDesk
from services.branch_worker.branch import BranchLoop
from services.branch_worker.heartbeat import Heartbeat, HeldLeases
from shared.decide.shares import excess, room_for
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
from shared.store.streams import EventStream, StreamEntry
from shared.store.workers import WorkerRegistry

log = logging.getLogger(__name__)

#: Most events read from one branch for one pass: bounds how long one pass holds a thread.
READ_BATCH = 500
#: Longest a branch goes without a pass when nothing happens: notices (a plain stream, which
#: the blocking group read cannot include) are read once per pass, so this bounds their latency.
IDLE_WAIT_S = 0.2
#: Longest the scheduler blocks on new events while a pass is running: a branch whose pass
#: ends waits at most this long for its next one.
BUSY_POLL_S = 0.02
#: How often the scheduler looks for branches to take: often enough that a new branch or a dead
#: worker's branch is taken well within a lease period, rarely enough to cost little.
ACQUIRE_EVERY_S = 1.0
#: How often an owner checks whether any GitTarget still writes to its branch.
ORPHAN_CHECK_S = 5.0
#: How long a branch must have had no GitTarget before it is retired: longer than the watcher's
#: reconcile pass (10 s by default), so a publisher that writes a branch before its GitTarget,
#: or a GitTarget deleted and created again, never loses its branch in between.
ORPHAN_GRACE_S = 30.0

#: How long a worker leaves a branch whose work failed before it tries to take it again.
RETAKE_PAUSE_S = 5.0
#: Failures of one branch's work that give the branch back instead of stopping the process: the
#: remote or its credentials, the work tree's disk, the cluster holding a Secret.
BRANCH_FAILURES = (GitError, OSError, KubeError)

CredentialSource = Callable[[BranchKey], dict[str, str]]
#: Builds a branch's work tree: (folder, repository URL, branch, git's environment).
WorkspaceFactory = Callable[[Path, str, str, dict[str, str]], Workspace]


def git_workspace(directory: Path, url: str, branch: str, env: dict[str, str]) -> Workspace:
    """The work tree every worker uses (tests hand in one whose push they hold up)."""
    return Workspace(directory, url, branch, env=env)


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


class Outcome(Enum):
    """How a job on one branch ended, for the scheduler to act on."""

    STARTED = "started"  # the branch is synced and its loop ready
    DONE = "done"  # a pass ran
    LOST = "lost"  # the lease is gone (the heartbeat found it, or a fenced write failed)
    FAILED = "failed"  # the remote, disk or cluster failed: give the branch back
    RETIRED = "retired"  # no GitTarget writes to the branch any more: its keys are gone


@dataclass(frozen=True, slots=True)
class Result:
    """What a job hands back to the scheduler."""

    bk: BranchKey
    outcome: Outcome
    loop: BranchLoop | None = None


class BranchWorker:
    """One branch-worker process."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        worker_id: str,
        clock: Callable[[], float],
        *,
        credentials: CredentialSource = no_credentials,
        workspaces: WorkspaceFactory = git_workspace,
    ) -> None:
        self.settings = settings
        self._workspaces = workspaces
        self.stores = stores
        self.worker_id = worker_id
        self._clock = clock
        self._credentials = credentials
        #: Branches started and owned; only the scheduler's thread changes it.
        self.loops: dict[BranchKey, BranchLoop] = {}
        self._lease_s = settings.lease_period.total_seconds()
        self.held = HeldLeases()
        self.heartbeat = Heartbeat(
            stores.leases, stores.registry, self.held, worker_id, clock=clock, lease_s=self._lease_s
        )
        self._beat_stop = threading.Event()
        self._beat_thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(settings.branch_threads, thread_name_prefix="branch")
        self._inflight: dict[BranchKey, Future[Result]] = {}
        self._finished = threading.Event()  # set whenever a job ends
        self._paused_until: dict[BranchKey, float] = {}
        self._last_pass: dict[BranchKey, float] = {}
        self._acquired_at: float | None = None
        self._targets_checked_at: dict[BranchKey, float] = {}
        self._orphan_since: dict[BranchKey, float] = {}

    def run(self, stop: threading.Event, burst: bool = False) -> None:
        """Work until ``stop`` is set; with ``burst``, until nothing is left to do."""
        self.heartbeat.beat()  # counted as alive before taking a share
        self._beat_thread = threading.Thread(
            target=self.heartbeat.run, args=(self._beat_stop,), name="heartbeat", daemon=True
        )
        self._beat_thread.start()
        try:
            while not stop.is_set():
                if self.heartbeat.error is not None:
                    raise RuntimeError("the lease heartbeat failed") from self.heartbeat.error
                did_work = self.wake()
                if burst and not did_work and self._settled():
                    return
        finally:
            self.shutdown()

    def _settled(self) -> bool:
        return not self._inflight and not any(lp.busy() for lp in self.loops.values())

    def wake(self) -> bool:
        """One scheduling round: collect finished jobs, take branches, read new events
        (blocking briefly) and hand out passes. True if any events were read."""
        self._finished.clear()
        self._collect()
        self._drop_lost()
        self._acquire_if_due()
        idle = [bk for bk in self.loops if bk not in self._inflight]
        if not idle:
            self._finished.wait(IDLE_WAIT_S)  # a finished pass sets it: no need to poll
            return False
        block_ms = max(int(self._wait_time(idle) * 1000), 1)
        batches = self.stores.events.read_many(idle, self.worker_id, READ_BATCH, block_ms)
        now = self._clock()
        for bk in idle:
            batch = batches.get(bk, [])
            if batch or self._due(bk, now):
                self._submit(bk, self._pass, bk, self.loops[bk], batch)
        return any(batches.values())

    def settle(self) -> None:
        """Wait for every job in the pool and act on its result (tests and shutdown)."""
        wait(list(self._inflight.values()))
        self._collect()

    def _submit(self, bk: BranchKey, job: Callable[..., Result], *args: object) -> None:
        future = self._pool.submit(job, *args)
        self._inflight[bk] = future
        future.add_done_callback(lambda _: self._finished.set())

    def _collect(self) -> None:
        for bk, future in list(self._inflight.items()):
            if future.done():
                del self._inflight[bk]
                self._act(future.result())  # an unexpected error stops the process, as before

    def _act(self, result: Result) -> None:
        bk = result.bk
        if result.outcome is Outcome.STARTED and result.loop is not None:
            self.loops[bk] = result.loop
            log.info("took branch %s (token %d)", bk, result.loop.lease.token, extra={"branch": bk})
        elif result.outcome is Outcome.DONE:
            self._last_pass[bk] = self._clock()
        elif result.outcome is Outcome.LOST:
            log.warning("lost branch %s to another worker", bk, extra={"branch": bk})
            self._drop(bk)
        elif result.outcome is Outcome.FAILED:
            self._give_back(bk)
        elif result.outcome is Outcome.RETIRED:
            log.info("retired branch %s: no GitTarget writes to it", bk, extra={"branch": bk})
            self._drop(bk)

    def _due(self, bk: BranchKey, now: float) -> bool:
        """A pass is due when the last is ``IDLE_WAIT_S`` old or a deadline has come."""
        last = self._last_pass.get(bk)
        if last is None or now - last >= IDLE_WAIT_S:
            return True
        deadline = self.loops[bk].next_deadline()
        return deadline is not None and deadline <= now

    def _wait_time(self, idle: list[BranchKey]) -> float:
        now = self._clock()
        waits = [BUSY_POLL_S if self._inflight else IDLE_WAIT_S]
        for bk in idle:
            waits.append(self._last_pass.get(bk, now) + IDLE_WAIT_S - now)
            deadline = self.loops[bk].next_deadline()
            if deadline is not None:
                waits.append(deadline - now)
        return max(min(waits), 0.0)

    def _pass(self, bk: BranchKey, loop: BranchLoop, batch: list[StreamEntry]) -> Result:
        """One pass over one branch, on a pool thread. Nothing is acknowledged unless pushed
        (M8): a lost lease leaves the batch pending for the next owner to claim."""
        if self.held.is_lost(bk):
            return Result(bk, Outcome.LOST)
        try:
            loop.handle(batch)
            loop.flush()
            loop.on_notices(self.stores.notices.read(bk))
            loop.tick()
            loop.apply_requests()
            if self._orphaned(bk, loop):
                return Result(bk, Outcome.RETIRED)
        except FencedOff:
            return Result(bk, Outcome.LOST)
        except BRANCH_FAILURES:
            log.exception(
                "branch %s failed; giving it back to start over", bk, extra={"branch": bk}
            )
            return Result(bk, Outcome.FAILED)
        return Result(bk, Outcome.DONE)

    def _orphaned(self, bk: BranchKey, loop: BranchLoop) -> bool:
        """Retire the branch once no GitTarget has written to it for ``ORPHAN_GRACE_S`` and
        nothing is open or unpushed here: events still in its stream belong to GitTargets that
        are gone (a live GitTarget is always registered with its branch), so none is lost."""
        now = self._clock()
        if now - self._targets_checked_at.get(bk, -ORPHAN_CHECK_S) < ORPHAN_CHECK_S:
            return False
        self._targets_checked_at[bk] = now
        if loop.busy() or self.stores.configs.has_targets(bk):
            self._orphan_since.pop(bk, None)
            return False
        since = self._orphan_since.setdefault(bk, now)
        if now - since < ORPHAN_GRACE_S or not self.stores.registry.retire(loop.lease):
            return False
        shutil.rmtree(loop.ws.directory, ignore_errors=True)
        return True

    def _drop(self, bk: BranchKey) -> None:
        self.loops.pop(bk, None)
        self.held.remove(bk)
        self.stores.notices.forget(bk)
        for memo in (self._last_pass, self._targets_checked_at, self._orphan_since):
            memo.pop(bk, None)

    def _drop_lost(self) -> None:
        """Branches whose lease the heartbeat found lost, unless a job on them is still out
        (its own end drops them)."""
        for bk in self.held.lost():
            if bk not in self._inflight:
                log.warning("lost branch %s to another worker", bk, extra={"branch": bk})
                self._drop(bk)

    def _give_back(self, bk: BranchKey) -> None:
        """Release a branch whose work failed: whoever takes it next (maybe this worker, after
        a pause) claims its unacknowledged events and replays them on the remote tip (M8)."""
        lease = self.held.get(bk)
        self._drop(bk)
        self._paused_until[bk] = self._clock() + RETAKE_PAUSE_S
        if lease is not None:
            self.stores.leases.release(lease)

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
        if config is None:
            return False  # the watcher has not published this branch's GitProvider yet
        lease = self.stores.leases.acquire(bk, self.worker_id)
        if lease is None:
            return False
        self.held.add(lease)
        self._submit(bk, self._start, bk, config, lease)
        return True

    def _start(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> Result:
        """Clone or sync a newly taken branch, on a pool thread."""
        try:
            loop = self._build(bk, config, lease)
            self.stores.notices.start(bk)
            loop.start()
        except FencedOff:
            return Result(bk, Outcome.LOST)
        except BRANCH_FAILURES:
            log.exception("cannot start branch %s; giving it back", bk, extra={"branch": bk})
            return Result(bk, Outcome.FAILED)
        return Result(bk, Outcome.STARTED, loop)

    def _build(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> BranchLoop:
        env = self._credentials(bk)
        workspace = self._workspaces(
            Path(self.settings.work_dir) / self.worker_id / bk, config.url, config.branch, env
        )
        return BranchLoop(
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

    def shutdown(self) -> None:
        """Finish the passes out, publish what is open (leases still renewed meanwhile), then
        give the branches back and leave the registry."""
        self.settle()
        flushes = [self._pool.submit(self._final_flush, bk, lp) for bk, lp in self.loops.items()]
        wait(flushes)
        self._beat_stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join()
        for bk in list(self.loops):
            lease = self.held.remove(bk)
            if lease is not None:
                self.stores.leases.release(lease)
        self.loops.clear()
        self.stores.registry.leave(self.worker_id)
        self._pool.shutdown()

    def _final_flush(self, bk: BranchKey, loop: BranchLoop) -> None:
        try:
            loop.flush(force=True)
        except FencedOff:
            log.warning("branch %s was taken over during shutdown", bk, extra={"branch": bk})
        except BRANCH_FAILURES:
            log.exception("branch %s failed during shutdown", bk, extra={"branch": bk})
