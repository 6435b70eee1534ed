"""The branch-worker process: share the branches by lease, and work each owned branch.

Three kinds of thread, so that no branch's work can hold up another's or the leases (Q1):

- the scheduler (the thread that calls ``run``) takes branches, reads what is new for all its
  idle branches at once (events, and the worker's doorbell, in one blocking group read; the
  notices and apply outcomes of the branches whose doorbell rang in one read each, and of
  all of them every ``HINTS_FALLBACK_S``: ``shared.store.bells``), and hands a pass (events,
  due windows, push, notices,
  tick, requests) to the pool only to a branch that has something new or something due (a
  window closing, an applier's wait ending, the steady tick): an idle branch costs no Redis
  command of its own; all bookkeeping of owned branches happens on this thread;
- a bounded pool (``Settings.branch_threads``) runs the passes and the start of newly taken
  branches; a branch is never in the pool twice, so each branch's work stays serial, while a
  slow remote occupies one thread and the other branches go on;
- the heartbeat (``heartbeat.py``) renews the registry entry and every held lease on its own
  schedule; a lease it finds lost is dropped before its branch gets more work.

Live workers heartbeat in Redis; each takes at most its fair share of the branches, capped by
``Settings.max_branches`` (``shared.decide.shares``), so two workers split twenty branches ten
and ten, a dead worker's branches are taken over by the others once its leases expire, and a
worker never owns more branches than it can serve. A branch no GitTarget writes to any more is
retired by its owner (``orphans.py``, ``WorkerRegistry.retire``): its keys go and nobody
leases it again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from services.branch_worker import metrics
from services.branch_worker.applied import AppliedReader, nothing_recorded
from services.branch_worker.branch import BranchLoop
from services.branch_worker.heartbeat import Heartbeat, HeldLeases
from services.branch_worker.jobs import (
    BranchJobs,
    CredentialSource,
    Outcome,
    Result,
    WorkspaceFactory,
    git_workspace,
    no_credentials,
)
from services.branch_worker.orphans import Orphans
from services.branch_worker.pacing import IDLE_BLOCK_S, Hints, Pacing
from services.branch_worker.signing import Signer, unsigned
from services.branch_worker.stores import Stores
from services.branch_worker.taking import RETAKE_PAUSE_S, Taking
from services.branch_worker.worktree import TreeFactory, WorkTree
from shared.model.config import BranchConfig
from shared.model.ids import BranchKey
from shared.model.notices import PushNotice
from shared.settings import Settings
from shared.store.errors import REDIS_DOWN
from shared.store.leases import Lease

__all__ = ["BranchWorker", "Stores"]  # Stores: where callers have always imported it from

log = logging.getLogger(__name__)

#: Most events read from one branch for one pass: bounds how long one pass holds a thread.
READ_BATCH = 500
#: Pause between scheduling rounds while Redis is away (C9): the process rides the outage out.
OUTAGE_PAUSE_S = 1.0
#: Longest pause before a worker takes again a branch that keeps failing.
MAX_RETAKE_PAUSE_S = 60.0


def retake_pause(failures: int) -> float:
    """How long a worker leaves a branch after its ``failures``-th failure in a row: from
    ``RETAKE_PAUSE_S``, doubling, at most ``MAX_RETAKE_PAUSE_S`` (a branch failing on every
    start costs a clone a minute, not one every five seconds)."""
    return float(min(RETAKE_PAUSE_S * 2 ** min(failures - 1, 16), MAX_RETAKE_PAUSE_S))


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
        signer: Signer = unsigned,
        trees: TreeFactory = WorkTree,
        applied: AppliedReader = nothing_recorded,
        apply_window: bool = True,
    ) -> None:
        self.settings = settings
        self.stores = stores
        self.worker_id = worker_id
        self._clock = clock
        #: Branches started and owned; only the scheduler's thread changes it.
        self.loops: dict[BranchKey, BranchLoop] = {}
        self._lease_s = settings.lease_period.total_seconds()
        self.held = HeldLeases()
        self.jobs = BranchJobs(
            settings,
            stores,
            worker_id,
            clock,
            self.held,
            credentials=credentials,
            workspaces=workspaces,
            signer=signer,
            trees=trees,
            applied=applied,
            apply_window=apply_window,
        )
        self.heartbeat = Heartbeat(
            stores.leases, stores.registry, self.held, worker_id, clock=clock, lease_s=self._lease_s
        )
        self._beat_stop = threading.Event()
        self._beat_thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(settings.branch_threads, thread_name_prefix="branch")
        self._inflight: dict[BranchKey, Future[Result]] = {}
        self._finished = threading.Event()  # set whenever a job ends
        self._paused_until: dict[BranchKey, float] = {}
        #: Failures of each branch since its last pass that ran (the retake pause grows).
        self._failures: dict[BranchKey, int] = {}
        #: When each owned branch is due a pass although nothing new came for it.
        self.pacing = Pacing(clock, self.loops)
        self.hints = Hints(clock)  # whose notices and outcomes to read (their doorbell rang)
        self._bell: str | None = None  # opened by the first round
        self.orphans = Orphans(stores.configs, clock)
        #: Set whenever a scheduling round found Redis away (tests wait on it).
        self.outage = threading.Event()
        #: Which branches this worker takes and gives back (its fair share, Q1).
        self.taking = Taking(
            stores,
            worker_id,
            clock,
            settings=settings,
            lease_s=self._lease_s,
            held=self.held,
            orphans=self.orphans,
            loops=self.loops,
            inflight=self._inflight,
            paused_until=self._paused_until,
            start=self._start,
            drop=self._drop,
        )

    def run(self, stop: threading.Event, burst: bool = False) -> None:
        """Work until ``stop`` is set; with ``burst``, until nothing is left to do."""
        if not self._first_beat(stop):
            return
        self._beat_thread = threading.Thread(
            target=self.heartbeat.run, args=(self._beat_stop,), name="heartbeat", daemon=True
        )
        self._beat_thread.start()
        try:
            while not stop.is_set():
                if self.heartbeat.error is not None:
                    raise RuntimeError("the lease heartbeat failed") from self.heartbeat.error
                try:
                    did_work = self.wake()
                except REDIS_DOWN as err:
                    self._ride_out(err, stop)
                    continue
                if burst and not did_work and self._settled():
                    return
        finally:
            self.shutdown()

    def _first_beat(self, stop: threading.Event) -> bool:
        """Be counted as alive before taking a share. Redis away at the start (down, or still
        loading its data after a restart: ``BusyLoadingError``) is ridden out like any outage
        (C9); the soak found a worker started while Redis loaded its AOF exit at once, leaving
        every branch unowned. False when stopped meanwhile."""
        while not stop.is_set():
            try:
                self.heartbeat.beat()
                return True
            except REDIS_DOWN as err:
                self._ride_out(err, stop)
        return False

    def _ride_out(self, err: Exception, stop: threading.Event) -> None:
        """Redis is away (C9): keep the process and what it holds; the heartbeat drops the
        branches once their leases may have expired, and the next rounds take them again."""
        if not self.outage.is_set():
            log.warning("Redis unreachable (%s); waiting for it", err)
        self.outage.set()
        stop.wait(OUTAGE_PAUSE_S)

    def _settled(self) -> bool:
        return not self._inflight and not any(lp.retrying() for lp in self.loops.values())

    def wake(self) -> bool:
        """One scheduling round: collect finished jobs, take branches, read what is new for the
        idle branches (blocking briefly on events) and hand out passes to those with something
        new or due. True if any events were read."""
        self._finished.clear()
        self._collect()
        if self.outage.is_set():
            self.stores.registry.heartbeat(self.worker_id, self._clock(), self._lease_s)
            log.info("Redis is back")
            self.outage.clear()
        self._drop_lost()
        self.taking.acquire_if_due()
        self._retire_orphans()
        idle = [bk for bk in self.loops if bk not in self._inflight]
        self._report()
        if not idle:
            self._finished.wait(IDLE_BLOCK_S)  # a finished pass sets it: no need to poll
            return False
        notices, outcomes = self._hints(idle)
        block_ms = (
            None
            if notices or outcomes
            else max(int(self.pacing.wait_time(idle, bool(self._inflight)) * 1000), 1)
        )
        readers = [bk for bk in idle if not self.loops[bk].stalled]  # U1: a stalled one waits
        read = self.stores.events.read_rung(
            readers, self.worker_id, READ_BATCH, block_ms, self._open_bell()
        )
        if read.rung:  # a notice or an outcome came meanwhile: read it now, not next round
            self.hints.rang(read.rung)
            later, more = self._hints(idle)
            notices = {bk: notices.get(bk, []) + later.get(bk, []) for bk in {*notices, *later}}
            outcomes |= more
        now = self._clock()
        for bk in idle:
            batch, news = read.batches.get(bk, []), notices.get(bk, [])
            if batch or news or bk in outcomes or self.pacing.due(bk, now):
                self._submit(bk, self.jobs.pass_, bk, self.loops[bk], batch, news)
        return any(read.batches.values())

    def _hints(
        self, idle: list[BranchKey]
    ) -> tuple[dict[BranchKey, list[PushNotice]], set[BranchKey]]:
        """Notices and outcomes of the idle branches whose doorbell rang (of all every
        ``HINTS_FALLBACK_S``)."""
        wanted = self.hints.due(idle)
        if not wanted:
            return {}, set()
        return self.stores.notices.read_many(wanted), self.stores.attempts.waiting(wanted)

    def _open_bell(self) -> str:
        """This worker's doorbell, created by its first round (``shared.store.bells``)."""
        if self._bell is None:
            self.stores.bells.open(self.worker_id, self._lease_s)
            self._bell = self.stores.bells.key(self.worker_id)
        return self._bell

    def _report(self) -> None:
        """Pool metrics: branches owned, passes running, passes waiting for a thread."""
        running = sum(1 for f in self._inflight.values() if f.running())
        metrics.OWNED_BRANCHES.set(len(self.loops))
        metrics.BUSY_THREADS.set(running)
        metrics.WAITING_BRANCHES.set(len(self._inflight) - running)

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
                self._act(self._result(bk, future))

    def _result(self, bk: BranchKey, future: Future[Result]) -> Result:
        """A job's result. An error no job expected (a bug, or content nothing foresaw: N1's
        ``re2.Error`` stopped the process on every restart) fails that branch only: its stall
        is recorded for its GitTargets (T4) and it is given back and retaken after a pause
        that grows while it keeps failing; every other branch goes on."""
        try:
            return future.result()
        except Exception as err:
            self.jobs.unexpected(bk, err)  # logged there, with backoff
            return Result(bk, Outcome.FAILED)

    def _act(self, result: Result) -> None:
        bk = result.bk
        if result.outcome is Outcome.STARTED and result.loop is not None:
            self.loops[bk] = result.loop
            log.info("took branch %s (token %d)", bk, result.loop.lease.token, extra={"branch": bk})
        elif result.outcome is Outcome.DONE:
            self.pacing.passed(bk)
            self._failures.pop(bk, None)
        elif result.outcome is Outcome.LOST:
            log.warning("lost branch %s to another worker", bk, extra={"branch": bk})
            self._drop(bk)
        elif result.outcome is Outcome.FAILED:
            self._give_back(bk)
        elif result.outcome is Outcome.RETIRED:
            log.info("retired branch %s: no GitTarget writes to it", bk, extra={"branch": bk})
            self._drop(bk)

    def _retire_orphans(self) -> None:
        # P6: a branch holding writes of a GitTarget withdrawn for its signing key is kept
        idle = [
            bk for bk in self.loops if bk not in self._inflight and not self.loops[bk].holding()
        ]
        if idle:
            for bk in self.orphans.to_retire(idle):
                self._submit(bk, self.jobs.retire, bk, self.loops[bk])

    def _start(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> None:
        self._submit(bk, self.jobs.start, bk, config, lease)

    def _drop(self, bk: BranchKey) -> None:
        self.jobs.forget(bk)
        self.loops.pop(bk, None)
        self.held.remove(bk)
        self.stores.notices.forget(bk)
        self.pacing.forget(bk)
        self.hints.forget(bk)
        self.orphans.forget(bk)

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
        failures = self._failures[bk] = self._failures.get(bk, 0) + 1
        self._paused_until[bk] = self._clock() + retake_pause(failures)
        if lease is not None:
            self._release(bk, lease)

    def _release(self, bk: BranchKey, lease: Lease) -> None:
        """Give a lease back; with Redis away it simply expires, so the outage is logged, not
        raised (C9: a pass failing, or a shutdown, while Redis is away must not end the
        process with a traceback)."""
        try:
            self.stores.leases.release(lease)
        except REDIS_DOWN as err:
            log.warning(
                "could not give branch %s back (Redis unreachable: %s); its lease expires",
                bk,
                err,
                extra={"branch": bk},
            )

    def shutdown(self) -> None:
        """Finish the passes out, publish what is open (leases still renewed meanwhile), then
        give the branches back and leave the registry."""
        self.settle()
        flushes = [
            self._pool.submit(self.jobs.final_flush, bk, lp) for bk, lp in self.loops.items()
        ]
        wait(flushes)
        self._beat_stop.set()
        if self._beat_thread is not None:
            self._beat_thread.join()
        for bk in list(self.loops):
            lease = self.held.remove(bk)
            if lease is not None:
                self._release(bk, lease)
        self.loops.clear()
        try:
            self.stores.registry.leave(self.worker_id)
        except REDIS_DOWN as err:  # its registry entry ages out like a killed worker's
            log.warning("could not leave the worker registry (Redis unreachable: %s)", err)
        self._pool.shutdown()
