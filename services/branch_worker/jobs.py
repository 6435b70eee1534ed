"""What a branch worker runs for one branch on a pool thread: start it, pass over it, retire
it, flush it at shutdown. Each job hands a ``Result`` back to the scheduler (``worker.py``),
which alone keeps the books of owned branches; a branch is never in two jobs at once.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Protocol

from services.branch_worker.applied import AppliedReader, nothing_recorded
from services.branch_worker.apply_window import ApplyWindowGuard
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.attribution import Attributor
from services.branch_worker.branch import BranchLoop
from services.branch_worker.commit_requests import RequestDesk
from services.branch_worker.failures import FailureLog
from services.branch_worker.heartbeat import HeldLeases
from services.branch_worker.intake import ProviderChanged
from services.branch_worker.signing import Signer, unsigned
from services.branch_worker.stores import Stores
from services.branch_worker.worktree import TreeFactory, WorkTree
from shared.git.errors import GitError
from shared.git.remote import ls_remote
from shared.git.workspace import Workspace
from shared.kube.errors import KubeError
from shared.model.config import BranchConfig
from shared.model.ids import BranchKey
from shared.model.notices import PushNotice
from shared.settings import Settings
from shared.store.branch_state import FencedOff
from shared.store.errors import REDIS_DOWN
from shared.store.leases import Lease
from shared.store.streams import StreamEntry

log = logging.getLogger(__name__)

#: Failures of one branch's work that give the branch back instead of stopping the process: the
#: remote or its credentials, the work tree's disk, the cluster holding a Secret, a GitProvider
#: handover (T1), Redis away (C9: nothing was acknowledged, the next owner claims the events
#: again).
BRANCH_FAILURES: tuple[type[Exception], ...] = (
    GitError,
    OSError,
    KubeError,
    ProviderChanged,
    *REDIS_DOWN,
)

#: Reasons of a branch's stall on its GitTargets (T4): its pushes fail (the remote refuses
#: them, or a git call fails), or it cannot start at all.
PUSH_FAILING, BRANCH_STALLED = "PushFailing", "BranchStalled"


class CredentialSource(Protocol):
    """Git's environment for a branch (``__call__``), and the removal of whatever it wrote to
    disk for it (``forget``) once the worker drops the branch (T3)."""

    def __call__(self, bk: BranchKey) -> dict[str, str]: ...

    def forget(self, bk: BranchKey) -> None: ...


#: Builds a branch's work tree: (folder, repository URL, branch, git's environment).
WorkspaceFactory = Callable[[Path, str, str, dict[str, str]], Workspace]


def git_workspace(directory: Path, url: str, branch: str, env: dict[str, str]) -> Workspace:
    """The work tree every worker uses (tests hand in one whose push they hold up)."""
    return Workspace(directory, url, branch, env=env)


class NoCredentials:
    """For remotes that need no credentials (the sandbox's git host without auth)."""

    def __call__(self, bk: BranchKey) -> dict[str, str]:
        return {}

    def forget(self, bk: BranchKey) -> None:
        """Nothing was written."""


no_credentials = NoCredentials()


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


class BranchJobs:
    """The jobs of one worker's branches; every one runs on a pool thread."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        worker_id: str,
        clock: Callable[[], float],
        held: HeldLeases,
        *,
        credentials: CredentialSource,
        workspaces: WorkspaceFactory,
        signer: Signer = unsigned,
        trees: TreeFactory = WorkTree,
        applied: AppliedReader = nothing_recorded,
        apply_window: bool = True,
    ) -> None:
        self.settings = settings
        #: W1's guard judges events (True, always in the product); False: every event is
        #: mirrored as it comes, for the tests that show the guard is what catches the race.
        self._apply_window = apply_window
        self._applied = applied  # Q5, issue 23: what appliers last applied, at a first start
        self.stores = stores
        self.worker_id = worker_id
        self._clock = clock
        self._held = held
        #: Builds each branch's work tree (``WorkTree``; the benchmarks' plain writer's own).
        self._trees = trees
        self._credentials = credentials
        self._workspaces = workspaces
        self._signer = signer
        #: Repeated failures of a branch, logged with backoff (one ERROR, then a WARNING a
        #: minute with the count).
        self.failures = FailureLog(log, clock)
        self._stalled: set[BranchKey] = set()  # branches whose stall this worker recorded
        self._compacted: set[BranchKey] = set()  # stalled branches whose stream it compacted

    def pass_(
        self, bk: BranchKey, loop: BranchLoop, batch: list[StreamEntry], notices: list[PushNotice]
    ) -> Result:
        """One pass over one branch, on a pool thread. Nothing is acknowledged unless pushed
        (M8): a lost lease leaves the batch pending for the next owner to claim."""
        if self._held.is_lost(bk):
            return Result(bk, Outcome.LOST)
        try:
            loop.handle(batch)
            loop.flush()
            loop.on_notices(notices)
            loop.tick()
            loop.apply_requests()
        except FencedOff:
            return Result(bk, Outcome.LOST)
        except BRANCH_FAILURES as err:
            self.failures.failed(bk, "failed (to start over)", err)
            self._note_stall(bk, PUSH_FAILING, f"{type(err).__name__}: {err}")
            return Result(bk, Outcome.FAILED)
        self._note_stall(bk, PUSH_FAILING, loop.push_refused)
        self.failures.succeeded(bk)
        return Result(bk, Outcome.DONE)

    def retire(self, bk: BranchKey, loop: BranchLoop) -> Result:
        """Retire a branch no GitTarget has written to for the grace, on a pool thread, even
        with writes open or unpushed (U1: a branch that cannot push retries until retired):
        every event and write it holds belongs to GitTargets that are gone (a live GitTarget
        is always registered with its branch, and the retirement is refused if one is)."""
        if self._held.is_lost(bk):
            return Result(bk, Outcome.LOST)
        if not self.stores.registry.retire(loop.lease):
            return Result(bk, Outcome.DONE)
        self._stalled.discard(bk)  # its stall record went with its other keys
        self.failures.forget(bk)
        shutil.rmtree(loop.ws.directory, ignore_errors=True)
        return Result(bk, Outcome.RETIRED)

    def forget(self, bk: BranchKey) -> None:
        """The worker dropped the branch (lost, given back, shed, retired): its SSH key goes
        now, not when the process ends (T3); taken again, it is written again."""
        self._credentials.forget(bk)

    def start(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> Result:
        """Clone or sync a newly taken branch, on a pool thread."""
        try:
            loop = self._build(bk, config, lease)
            self.stores.notices.start(bk)
            loop.start()
        except FencedOff:
            return Result(bk, Outcome.LOST)
        except BRANCH_FAILURES as err:
            self.failures.failed(bk, "cannot start", err)
            self._note_stall(bk, BRANCH_STALLED, f"{type(err).__name__}: {err}")
            return Result(bk, Outcome.FAILED)
        self._stalled.add(bk)  # a stall left by an earlier owner is cleared on the first pass
        return Result(bk, Outcome.STARTED, loop)

    def unexpected(self, bk: BranchKey, err: Exception) -> None:
        """A job on the branch raised what no job expected: logged with backoff, and the
        branch's stall, for its GitTargets' status (T4); the scheduler gives it back."""
        self.failures.failed(bk, "unexpected error", err)
        self._note_stall(bk, BRANCH_STALLED, f"{type(err).__name__}: {err}")

    def _note_stall(self, bk: BranchKey, reason: str, problem: str | None) -> None:
        """Record the branch's stall for its GitTargets' status (T4), or clear it once a pass
        succeeds; Redis is written only when the branch is (or was) stalled. Recording it can
        never end the process (N2: a message Redis would not take did): a failure is
        logged, and the branch goes on as it would have."""
        try:
            self._record_stall(bk, reason, problem)
        except REDIS_DOWN:
            log.warning("branch %s: its stall could not be recorded", bk, extra={"branch": bk})
        except Exception:  # the reason is only a report; the branch's own outcome stands
            log.exception("branch %s: its stall could not be recorded", bk, extra={"branch": bk})

    def _record_stall(self, bk: BranchKey, reason: str, problem: str | None) -> None:
        if problem is not None:
            self.stores.health.stalled(bk, reason, problem, self._clock())
            if bk not in self._compacted:  # U1: from now on the stream holds the newest only
                self.stores.events.compact(bk)
                self._compacted.add(bk)
            self._stalled.add(bk)
        elif bk in self._stalled:
            self.stores.health.recovered(bk)
            self._stalled.discard(bk)
            self._compacted.discard(bk)

    def _build(self, bk: BranchKey, config: BranchConfig, lease: Lease) -> BranchLoop:
        env = self._credentials(bk)
        workspace = self._workspaces(
            Path(self.settings.work_dir) / self.worker_id / bk, config.url, config.branch, env
        )
        return BranchLoop(
            lease,
            config,
            self._trees(workspace),
            events=self.stores.events,
            states=self.stores.states,
            configs=self.stores.configs,
            clock=self._clock,
            worker_id=self.worker_id,
            read_tip=lambda: ls_remote(config.url, config.branch, env),
            steady_tick=self.settings.steady_tick.total_seconds(),
            delivered_at=lambda: self.stores.notices.delivered_at(config.url),
            trust_max_age=self.settings.remote_trust_max_age.total_seconds(),
            max_window=self.settings.max_window.total_seconds(),
            signer=self._signer,
            applied=self._applied,
            desk=ApplierDesk(
                bk,
                config,
                configs=self.stores.configs,
                appliers=self.stores.appliers,
                attempts=self.stores.attempts,
                states=self.stores.states,
                clock=self._clock,
                attempt_deadline_s=self.settings.attempt_deadline.total_seconds(),
                ledger=self.stores.ledger,
            ),
            guard=ApplyWindowGuard(
                bk,
                appliers=self.stores.appliers,
                ledger=self.stores.ledger,
                collisions=self.stores.collisions,
                edits=self.stores.api_edits,
                clock=self._clock,
                enabled=self._apply_window,
            ),
            requests=RequestDesk(self.stores.commit_requests, config.branch, self._clock),
            attributor=Attributor(
                self.stores.facts, self._clock, self.settings.attribution_grace.total_seconds()
            ),
        )

    def final_flush(self, bk: BranchKey, loop: BranchLoop) -> None:
        try:
            loop.flush(force=True)
        except FencedOff:
            log.warning("branch %s was taken over during shutdown", bk, extra={"branch": bk})
        except BRANCH_FAILURES:
            log.exception("branch %s failed during shutdown", bk, extra={"branch": bk})
