"""One owned branch: object events in, windows, commits and compare-and-swap pushes out.

Invariants:
- an event is acknowledged only after the push that holds its write, or at once when it makes
  no write or is refused (M3, M8, M10); a write whose GitTarget's signing key cannot be used is
  held, unacknowledged, until the key works again (P6, T4): it is never dropped;
- pushes are CAS against the tip we built on; a rejection fetches, resets to the new tip and
  replays every write not yet pushed, one commit per closed window, then pushes again (M7);
- every decided write restarts the branch's quiet period (Q2) and is published with the
  window and pending counts (Q3), fenced by the lease's token.
"""

from __future__ import annotations

from collections.abc import Callable

from services.branch_worker import metrics
from services.branch_worker.applied import AppliedReader
from services.branch_worker.apply_window import Admission
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.backlog import Backlog
from services.branch_worker.commit_requests import Requests
from services.branch_worker.committing import Commits
from services.branch_worker.conditions import Conditions
from services.branch_worker.deadlines import Deadlines
from services.branch_worker.empty_commits import EmptyCommitter
from services.branch_worker.holds import Holds, Parking
from services.branch_worker.intake import Intake
from services.branch_worker.pushing import Pushes
from services.branch_worker.releases import Releases
from services.branch_worker.signing import Signer
from services.branch_worker.tips import DeliveredAt, TipReader, Tips, never_delivered
from services.branch_worker.waits import Attribution, FactWaits
from services.branch_worker.windows import OpenWindow
from services.branch_worker.worktree import WorkTree
from shared.decide.tips import TipKind, on_notices
from shared.git.workspace import Workspace
from shared.model.config import BranchConfig
from shared.model.ids import GitTargetUid
from shared.model.notices import PushNotice
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.leases import Lease
from shared.store.streams import EventStream, StreamEntry


class BranchLoop:
    """Everything one worker does for one branch it owns: events in (applied in stream order,
    a slice per wake), windows opened and closed, and the parts that commit, hold, push and
    replay them (each in a module of its own)."""

    def __init__(
        self,
        lease: Lease,
        config: BranchConfig,
        tree: WorkTree,
        *,
        events: EventStream,
        states: BranchStates,
        configs: ConfigStore,
        clock: Callable[[], float],
        worker_id: str,
        read_tip: TipReader,
        steady_tick: float,
        max_window: float,
        desk: ApplierDesk,
        signer: Signer,
        guard: Admission,
        requests: Requests,
        attributor: Attribution,
        applied: AppliedReader,
        delivered_at: DeliveredAt = never_delivered,
        trust_max_age: float = 0.0,
    ) -> None:
        self.lease = lease
        self.config = config
        self.desk = desk
        #: What each applier last applied, read at the branch's very first start (Q5, issue 23).
        self._applied = applied
        self._requests = requests  # P6: CommitRequests bound to windows
        self._events, self._states, self._configs = events, states, configs
        self._clock = clock
        self._counts: tuple[int, int] | None = None  # (windows, pending) as last published
        self._worker = worker_id
        #: The work tree: the tip its writes build on, and how each event is written.
        self.tree = tree
        #: Per GitTarget, its writes not committed yet (one author each); the parts below
        #: share this one dict.
        self.open_windows: dict[GitTargetUid, OpenWindow] = {}
        #: Events read or claimed but not applied yet (``backlog.SLICE`` per wake).
        self.backlog = Backlog()
        #: Joins each event to its audit fact (GitTargets with attribution on).
        self.waits = FactWaits(attributor, clock)
        #: The refusals this owner sets and lifts on its GitTargets.
        #: Empty commits for refused edits of GitTargets without an applier (P11).
        self._empty = EmptyCommitter(
            lease, config, self.tree, states=states, configs=configs, clock=clock
        )
        self._conditions = Conditions(lease.branch, configs, desk, self._empty.refused)
        #: Writes of GitTargets whose commits cannot be signed now (P6): left uncommitted in
        #: the work tree, their events unacknowledged, until their key is asked for again.
        self._holds = Holds(lease.branch, self._conditions, clock)
        #: Events of GitTargets withdrawn while their key is out (the watcher stops serving
        #: a GitTarget whose key it finds unusable, so its settings are gone).
        self._parking = Parking(self._conditions, clock)
        #: Closed windows' commits, kept until their push lands.
        self._commits = Commits(
            config, tree.ws, signer=signer, conditions=self._conditions, holds=self._holds
        )
        #: The remote tip as this owner sees it: what is ours, when it was read (Q5-Q7).
        self._tips = Tips(
            lease,
            states=states,
            desk=desk,
            clock=clock,
            read_tip=read_tip,
            steady_tick=steady_tick,
            delivered_at=delivered_at,  # P14: trusted while the receiver delivers
            trust_max_age=trust_max_age,
        )
        #: Compare-and-swap pushes, and the replay of a refused one (M7).
        self._pushes = Pushes(
            lease,
            self.tree,
            open_windows=self.open_windows,
            commits=self._commits,
            holds=self._holds,
            conditions=self._conditions,
            tips=self._tips,
            states=states,
            events=events,
            requests=requests,
            clock=clock,
            health=configs.target_health(),
        )
        #: Held windows committed once their keys work again (P6).
        self._releases = Releases(
            lease,
            self.tree,
            open_windows=self.open_windows,
            commits=self._commits,
            holds=self._holds,
            conditions=self._conditions,
            configs=configs,
            events=events,
            signer=signer,
        )
        #: Events in: applied to the work tree, into windows.
        self._intake = Intake(
            lease,
            config,
            self.tree,
            open_windows=self.open_windows,
            backlog=self.backlog,
            waits=self.waits,
            parking=self._parking,
            conditions=self._conditions,
            commits=self._commits,
            guard=guard,
            desk=desk,
            requests=requests,
            configs=configs,
            events=events,
            clock=clock,
        )
        #: When the owner must act although nothing arrives.
        self._deadlines = Deadlines(
            config,
            max_window,
            clock,
            open_windows=self.open_windows,
            backlog=self.backlog,
            waits=self.waits,
            holds=self._holds,
            parking=self._parking,
            tips=self._tips,
            desk=desk,
            requests=requests,
        )

    @property
    def push_refused(self) -> str | None:
        """Why the last push did not land, while the remote keeps refusing it (T4); None once
        a push lands. The pass's job records it as the branch's stall, and while it is set
        the owner reads no new events (U1: they wait in the stream, one per object, instead
        of piling up in this process); its pending writes are retried every pass."""
        return self._pushes.refused

    @property
    def stalled(self) -> bool:
        """Every push attempt of the last flush was refused (U1, T4)."""
        return self.push_refused is not None

    @property
    def bk(self) -> str:
        """The branch key."""
        return self.lease.branch

    @property
    def tip(self) -> str | None:
        """The commit this owner's writes build on (the remote tip, or its own last push)."""
        return self.tree.tip

    @property
    def ws(self) -> Workspace:
        """The branch's work tree."""
        return self.tree.ws

    def start(self) -> None:
        """Sync the work tree to the remote tip and take over what a previous owner left."""
        tip = self.tree.sync()
        self._conditions.restart()
        published = self._states.read(self.lease.branch)
        self._tips.taken(published.ours)
        if published.observed_tip or _owned_before(self.lease):
            self._tips.found(tip, published.observed_tip)
        elif tip:
            self.desk.on_first_start(tip, self._applied)
        released = [w for w in published.pending if w != self.lease.owner]
        self._states.publish_takeover(self.lease, tip, released)
        self._events.ensure_group(self.lease.branch)
        self.backlog.reset(self._events.claim_pending(self.lease.branch, self._worker))
        self.handle([])

    def handle(self, entries: list[StreamEntry]) -> None:
        """Apply new events to the work tree, opening or extending windows.

        Events queue behind any backlog, so they are applied in stream order; at most
        ``backlog.SLICE`` are applied per call and the rest wait for the next wake.
        """
        self.backlog.extend(entries)
        if self._intake.next_slice():
            self._publish_counts(last_write_at=self._clock())

    def on_notices(self, notices: list[PushNotice]) -> None:
        """Q5-Q6 for every notice of this wake at once, read after any push in flight (pushes
        finish inside a wake): the window closes at most once and the tip is read at most once
        (C4: a burst of deliveries costs one ls-remote)."""
        if not notices:
            return
        decision = on_notices([n.after for n in notices], self.tip, self.busy())
        metrics.NOTICES.labels(
            "close" if decision.close_window else "read" if decision.read_tip else "ignored"
        ).inc(len(notices))
        if decision.close_window:
            self.flush(force=True)  # publish pending writes before a foreign commit applies
        if decision.read_tip:
            self.check_tip()

    def tick(self) -> None:
        """Q7: an idle branch reads its tip every steady tick, webhook or not. An idle owner
        also takes over events a stale owner read after this one started (M8, Q3: until
        they are pushed the branch is never quiet)."""
        if not self.busy():
            stranded = self._events.claim_stranded(self.lease.branch, self._worker)
            if stranded:
                self.handle(stranded)
        if self._tips.due(self.busy()):
            self.check_tip()

    def check_tip(self) -> TipKind:
        """Read the remote tip (ls-remote) and record it; an idle branch follows it, and a
        foreign tip's request goes out first (Q4: quiet, decided at the tip as read; the next
        write builds on the work tree in a later pass, after the fetch and reset)."""
        tip, kind = self._tips.read(self.tip)
        self._states.publish_tip(self.lease, tip, read_at=self._tips.read_at)
        if kind is not TipKind.UNCHANGED and not self.busy():
            if kind is TipKind.FOREIGN:
                self.desk.wake()
            self.tree.sync()  # follow the branch so the next write builds on it
        return kind

    def apply_requests(self) -> None:
        """A1-A5: outcomes in, requests out, for the appliers this branch's GitTargets name;
        P11: an empty commit for refused edits of GitTargets that name none."""
        self.desk.wake()
        self._empty.wake(self.busy(), self._tips)

    def next_deadline(self) -> float | None:
        """When the owner must act although nothing arrives: a window closes, an applier's
        wait ends (a CatchUp's quiet period, a backoff), an empty commit's rate limit ends
        (P11), or an idle branch's steady tick (Q7)."""
        times = [self._deadlines.next(self.busy()), self._empty.next_wake]
        return min((t for t in times if t is not None), default=None)

    def busy(self) -> bool:
        """Anything unapplied, open, held or unpushed on this worker (Q3: not quiet)."""
        return self.retrying() or self.holding()

    def retrying(self) -> bool:
        """Anything unapplied, open or unpushed: worth a pass every ``RETRY_S``. Held writes
        (``Holds``) are not: they wait for their own ``next_deadline``."""
        return bool(self.backlog or self.open_windows or self._commits.closed)

    def holding(self) -> bool:
        """Writes or events held until a GitTarget's signing key works again."""
        return self._holds.any() or self._parking.any()

    def held(self) -> list[GitTargetUid]:
        """The GitTargets whose writes are held because their commits cannot be signed."""
        return self._holds.uids()

    def flush(self, force: bool = False) -> None:
        """Close the windows that are due (all when ``force``), commit them, and push; then
        (even when that failed) report the bound CommitRequests overdue (P6)."""
        try:
            self._flush(force)
        finally:
            self._report_overdue()

    def _report_overdue(self) -> None:
        """P6: FinalizeFailed for requests whose window is not pushed a bound after their
        deadline: its push refused, the branch failing, or its signing key out."""
        if self._requests.next_failure() is None:
            return
        held = self._holds.request_uids()
        problem = self.push_refused or (
            "the branch's commit or push failed; see its GitTargets' conditions"
        )
        self._requests.overdue(self.lease, problem, held)

    def _flush(self, force: bool) -> None:
        now = self._clock()
        self.backlog.put_back(self._parking.due(now, force))  # handled again, oldest first
        due_held = self._holds.due(now, force)
        if due_held:
            self._releases.retry(due_held)
        for uid in self._deadlines.due_windows(now, force):
            self._commits.commit(self.open_windows.pop(uid))
        if self._commits.closed:
            self._pushes.push()
        self._publish_counts()

    def _publish_counts(self, last_write_at: float | None = None) -> None:
        """Q2, Q3: the open windows and pending writes, published when they changed since this
        owner last did (an idle pass writes nothing) or a decided write restarts the quiet
        period."""
        pending = len(self.backlog) + sum(len(w.entries) for w in self.open_windows.values())
        pending += sum(len(c.entries) for c in self._commits.closed)
        pending += self._holds.pending()
        pending += self._parking.count()
        counts = (len(self.open_windows), pending)
        if last_write_at is None and counts == self._counts:
            return
        self._states.publish_counts(self.lease, *counts, last_write_at)
        self._counts = counts


def _owned_before(lease: Lease) -> bool:
    """Q5 at a start that finds no tip published: an earlier owner took the branch (the
    fencing token counts every take) and published nothing, so it died or failed before its
    first publication. Notices stored since it started were its to read and this start skips
    them (``NoticeReader.start``), so the tip may hold outside pushes no applier was asked
    for: a tip we did not push is foreign. The branch's very first owner cannot tell what Git
    held at install from an outside push made just before it started, so it asks each applier
    what it last applied and owes a ForeignCommit where that is not the tip
    (``ApplierDesk.on_first_start``; issue 23, finding 12)."""
    return lease.token > 1
