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

import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import replace
from pathlib import Path

from services.branch_worker import metrics
from services.branch_worker.applied import AppliedReader, nothing_recorded
from services.branch_worker.apply_window import ApplyWindowGuard
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.attribution import Attributor, Wait
from services.branch_worker.commit_requests import RequestDesk
from services.branch_worker.committing import Commits
from services.branch_worker.conditions import Conditions
from services.branch_worker.folder import Folder
from services.branch_worker.holds import Holds, Parking
from services.branch_worker.listings import missed_deletes
from services.branch_worker.signing import Signer, SigningUnavailable, unsigned
from services.branch_worker.tips import TipReader, Tips
from services.branch_worker.windows import (
    ClosedWindow,
    OpenWindow,
    depth,
    overlap,
)
from services.branch_worker.writer import apply_event, held_as_is, only_in_history
from shared.decide.tips import TipKind, on_notices
from shared.decide.window import closes_at, is_due, open_window
from shared.git.workspace import Workspace
from shared.model.attribution import Author
from shared.model.commit_requests import RESOLVED, UNATTRIBUTED, UNRESOLVED, CommitRequestItem
from shared.model.config import BranchConfig, TargetConfig
from shared.model.events import ObjectEvent
from shared.model.ids import GitTargetUid
from shared.model.notices import PushNotice
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.leases import Lease
from shared.store.streams import EventStream, StreamEntry

log = logging.getLogger(__name__)

#: Push attempts in one flush before the branch waits for its next wake.
MAX_PUSH_ATTEMPTS = 5
#: Most events applied in one ``handle``: what a new owner claims (a whole snapshot, maybe) is
#: worked in slices of this size, one per wake, so the worker renews its leases between them
#: instead of losing the branch mid-claim and replaying it again (Q1, M8).
SLICE = 500


class _AwaitFact(Exception):
    """The event's audit fact may still arrive: leave it, and what follows, for a later pass."""


class ProviderChanged(Exception):
    """The branch's GitProvider changed since this owner took it (T1): give the branch back,
    so the next owner writes with the new GitProvider's credentials and committer."""


class BranchLoop:
    """Everything one worker does for one branch it owns."""

    def __init__(
        self,
        lease: Lease,
        config: BranchConfig,
        workspace: Workspace,
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
        signer: Signer = unsigned,
        guard: ApplyWindowGuard | None = None,
        requests: RequestDesk | None = None,
        attributor: Attributor | None = None,
        plain_writer: bool = False,
        applied: AppliedReader = nothing_recorded,
    ) -> None:
        self.lease = lease
        #: What each applier last applied, read at the branch's very first start (Q5, issue 23).
        self._applied = applied
        #: The benchmark seam's plain writer (``shared.settings.PLAIN_WRITER_TEST_SEAM``).
        self._plain_writer = plain_writer
        self.requests = requests  # P6: CommitRequests bound to windows
        #: Joins each event to its audit fact (GitTargets with attribution on).
        self.attributor = attributor
        #: Entries admitted by the apply window whose fact is awaited (see ``_author``).
        self._awaiting: set[str] = set()
        #: The key file each GitTarget's commits are signed with (``spec.commit.signing``).
        self._signer = signer
        self.config = config
        self.ws = workspace
        self._events, self._states, self._configs = events, states, configs
        self._clock = clock
        self._worker = worker_id
        self._open: dict[GitTargetUid, OpenWindow] = {}
        self._folders: dict[GitTargetUid, Folder] = {}
        #: Per GitTarget, the digests of files the writer rendered whole (see Folder): kept
        #: when the folders are read again after a reset.
        self._rendered: dict[GitTargetUid, dict[str, str]] = {}
        #: Events read or claimed but not applied yet, oldest first (see ``SLICE``).
        self._backlog: list[StreamEntry] = []
        #: The refusals this owner sets and lifts on its GitTargets.
        self._conditions = Conditions(lease.branch, configs, desk)
        #: Writes of GitTargets whose commits cannot be signed now (P6): left uncommitted in
        #: the work tree, their events unacknowledged, until their key is asked for again.
        self._holds = Holds(lease.branch, self._conditions, clock)
        #: Events of GitTargets withdrawn while their key is out (the watcher stops serving
        #: a GitTarget whose key it finds unusable, so its settings are gone).
        self._parking = Parking(self._conditions, clock)
        #: Closed windows' commits, kept until their push lands.
        self._commits = Commits(
            config, workspace, signer=signer, conditions=self._conditions, holds=self._holds
        )
        self.tip: str | None = None
        self.desk = desk
        self.guard = guard  # W1: withholds the applier's revert of an API edit
        self._max_window = max_window  # Settings.max_window: a process setting, not a CRD's
        #: The remote tip as this owner sees it: what is ours, when it was read (Q5-Q7).
        self._tips = Tips(
            lease,
            states=states,
            desk=desk,
            clock=clock,
            read_tip=read_tip,
            steady_tick=steady_tick,
        )
        #: Why the last push did not land, while the remote keeps refusing it (T4); None once
        #: a push lands. The pass's job records it as the branch's stall, and while it is set
        #: the owner reads no new events (U1: they wait in the stream, one per object, instead
        #: of piling up in this process); its pending writes are retried every pass.
        self.push_refused: str | None = None

    @property
    def stalled(self) -> bool:
        """Every push attempt of the last flush was refused (U1, T4)."""
        return self.push_refused is not None

    @property
    def bk(self) -> str:
        """The branch key."""
        return self.lease.branch

    def start(self) -> None:
        """Sync the work tree to the remote tip and take over what a previous owner left."""
        self.tip = self.ws.fetch()
        self.ws.reset(self.tip)
        self._folders.clear()
        self._conditions.restart()
        published = self._states.read(self.lease.branch)
        self._tips.taken(published.ours)
        if published.observed_tip or _owned_before(self.lease):
            self._tips.found(self.tip, published.observed_tip)
        elif self.tip:
            self.desk.on_first_start(self.tip, self._applied)
        released = [w for w in published.pending if w != self.lease.owner]
        self._states.publish_takeover(self.lease, self.tip, released)
        self._events.ensure_group(self.lease.branch)
        self._backlog = self._events.claim_pending(self.lease.branch, self._worker)
        self.handle([])

    def handle(self, entries: list[StreamEntry]) -> None:
        """Apply new events to the work tree, opening or extending windows.

        Events queue behind any backlog, so they are applied in stream order; at most
        ``SLICE`` are applied per call and the rest wait for the next wake.
        """
        self._backlog.extend(entries)
        if self.attributor is not None:  # an event's grace starts when it is first seen (N5)
            self.attributor.seen(self._backlog)
        batch, self._backlog = self._backlog[:SLICE], self._backlog[SLICE:]
        targets: dict[GitTargetUid, TargetConfig | None] = {}  # one read per GitTarget per slice
        self._parking.new_slice()
        done: list[StreamEntry] = []
        wrote = False
        parked = self._parking.count()
        if self.attributor is not None:
            self.attributor.new_pass()
        waiting = False
        for index, entry in enumerate(batch):
            try:
                made = self._apply(entry, targets)
            except _AwaitFact:  # stream order holds: this event and the rest wait together
                self._backlog[:0] = batch[index:]
                waiting = True
                break
            if not made:
                done.append(entry)
            elif self._parking.count() == parked:
                wrote = True
            parked = self._parking.count()
        if not waiting and self.attributor is not None:
            self.attributor.clear_waits()
            self._awaiting.clear()
        self._events.ack(self.lease.branch, done)
        if wrote:
            self._publish_counts(last_write_at=self._clock())

    def _apply(self, entry: StreamEntry, targets: dict[GitTargetUid, TargetConfig | None]) -> bool:
        """True when the entry made a write (and is now pending)."""
        if entry.request is not None:
            return self._request(entry, self._submitted(entry, entry.request, targets))
        item = entry.listing or entry.event
        if item is None:
            return False  # malformed
        if item.target.uid not in targets:
            targets[item.target.uid] = self._configs.target(item.target.uid)
        target = targets[item.target.uid]
        if target is None or target.key_held:
            return self._parking.park(entry, target)  # gone (dropped), or not served for its key
        if not self.config.writes_for(target):
            return self._not_ours(target)
        if entry.listing is None:
            return self._write(entry, target)
        wrote = False
        for event in missed_deletes(entry.listing, self._folder(target)):  # D2
            wrote = self._write(StreamEntry(entry.entry_id, event, entry.listing), target) or wrote
        return wrote

    def _write(self, entry: StreamEntry, target: TargetConfig) -> bool:
        """Apply one object event; True when it made a write (and is now pending)."""
        event = entry.event
        assert event is not None
        judged = entry.entry_id in self._awaiting  # admitted before its fact was waited for
        if (
            not judged
            and self.guard is not None
            and not self.guard.admits(
                target,
                event,
                lambda: only_in_history(self.ws, target, event, self._folder(target)),
                lambda: held_as_is(event, self._folder(target)),
            )
        ):
            # W1: withheld; Git keeps the API edit (or the tip's newer content, when the
            # applier applied an older commit). A Kustomization's CatchUp or ForeignCommit
            # (owed by the push) applies it back; an Application is owed a Repair for it.
            self.desk.on_withheld(target)
            return False
        author = self._author(target, entry, event)
        current = self._open.get(target.uid)
        if current is not None and current.author != author:  # a window holds one author
            self._commits.commit(self._open.pop(target.uid))
            current = None
        applied = apply_event(self.ws, target, event, self._folder(target))
        self._conditions.applied(target, event, applied)
        if applied.kind != "write":
            return False
        now = self._clock()
        if current is None:
            self._open[target.uid] = OpenWindow(target, open_window(now), [entry], author)
        else:
            current.window = current.window.with_write(now)
            current.entries.append(entry)
        if self.config.commit_window_s <= 0:
            self._commits.commit(self._open.pop(target.uid))  # commitWindow 0s: a commit per write
        return True

    def _request(self, entry: StreamEntry, request: CommitRequestItem) -> bool:
        """P6: bind a CommitRequest to its GitTarget's open window; True while it waits for
        the push of that window (its entry is acknowledged with the window's)."""
        if self.requests is None:
            return False
        window = self._open.get(request.target.uid)
        if not self.requests.receive(self.lease, request, window, self.tip or ""):
            return False
        assert window is not None
        window.entries.append(entry)
        return True

    def _submitted(
        self,
        entry: StreamEntry,
        request: CommitRequestItem,
        targets: dict[GitTargetUid, TargetConfig | None],
    ) -> CommitRequestItem:
        """P5, P6: the request with its submitter, when its GitTarget has attribution (else as
        it came); _AwaitFact while the audit fact of its create may come (stream order holds,
        and the window it would close stays open with it)."""
        uid = request.target.uid
        if uid not in targets:
            targets[uid] = self._configs.target(uid)
        target = targets[uid]
        if self.attributor is None or target is None or not target.audit_route:
            return request
        found = self.attributor.submitter(target, entry.entry_id, request)
        if isinstance(found, Wait):
            raise _AwaitFact
        if found is None:
            return request
        if found.outcome == "resolved" and found.username:
            return replace(request, author=found.username, attribution=RESOLVED)
        return replace(request, author=UNATTRIBUTED, attribution=UNRESOLVED)

    def _author(
        self, target: TargetConfig, entry: StreamEntry, event: ObjectEvent
    ) -> Author | None:
        """Who made the edit (None: attribution is off); _AwaitFact while its fact may come."""
        if self.attributor is None or not target.audit_route or entry.listing is not None:
            return None  # a missed delete found by a listing is the product's own repair
        found = self.attributor.author(target, entry.entry_id, event)
        if isinstance(found, Wait):
            self._awaiting.add(entry.entry_id)  # judged by the apply window once, not per pass
            raise _AwaitFact
        self._awaiting.discard(entry.entry_id)
        return found

    def _awaiting_until(self) -> float | None:
        """While an event waits for its fact: when its grace ends (windows stay open)."""
        if self.attributor is None:
            return None
        until = self.attributor.waiting_until()
        return until if until is not None and until > self._clock() else None

    def _not_ours(self, target: TargetConfig) -> bool:
        """T1: a GitTarget of another GitProvider never writes with this branch's Secret. The
        watcher serves only the holder's GitTargets, so this is a handover (published config
        changed: start over with it) or a record it withdraws (dropped unwritten)."""
        if self._configs.branch(self.lease.branch) != self.config:
            raise ProviderChanged(f"branch {self.bk}: its GitProvider changed")
        log.warning(
            "dropped an event of GitTarget %s/%s: the branch is written by another GitProvider",
            target.namespace,
            target.name,
            extra={"branch": self.bk},
        )
        return False

    def _folder(self, target: TargetConfig) -> Folder:
        folder = self._folders.get(target.uid)
        if folder is None or folder.path != target.path:
            rendered = self._rendered.setdefault(target.uid, {})
            folder = self._folders[target.uid] = Folder(
                self.ws, target.path, rendered, plain=self._plain_writer
            )
        return folder

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
        """Read the remote tip (ls-remote) and record what it is."""
        tip, kind = self._tips.read(self.tip)
        if kind is not TipKind.UNCHANGED and not self.busy():
            self.tip = self.ws.fetch()  # follow the branch so the next write builds on it
            self.ws.reset(self.tip)
            self._folders.clear()
        self._states.publish_tip(self.lease, tip, read_at=self._tips.read_at)
        return kind

    def apply_requests(self) -> None:
        """A1-A5: outcomes in, requests out, for the appliers this branch's GitTargets name."""
        self.desk.wake()

    def next_deadline(self) -> float | None:
        """When the owner must act although nothing arrives: a window closes, an applier's
        wait ends (a CatchUp's quiet period, a backoff), or an idle branch's steady tick (Q7)."""
        c = self.config
        awaiting = self._awaiting_until()
        times = [
            closes_at(w.window, c.commit_window_s, self._max_window) for w in self._open.values()
        ]
        times.extend(w.deadline for w in self._open.values() if w.deadline is not None)
        if awaiting is not None:  # closes are deferred until the grace ends
            times = [max(t, awaiting) for t in times]
        times.extend(self._holds.retry_times())
        if self._parking.retry_at is not None:
            times.append(self._parking.retry_at)
        if not self.busy():
            times.append(self._tips.next_read())
        if self.desk.next_wake is not None:
            times.append(self.desk.next_wake)
        if self.requests is not None and (failure := self.requests.next_failure()) is not None:
            times.append(failure)  # P6: FinalizeFailed is reported on time
        if self._backlog:  # more events to apply: wake again at once (or when a grace ends;
            # the pass every RETRY_S meanwhile looks for the fact)
            times.append(awaiting if awaiting is not None else self._clock())
        return min(times) if times else None

    def busy(self) -> bool:
        """Anything unapplied, open, held or unpushed on this worker (Q3: not quiet)."""
        return self.retrying() or self.holding()

    def retrying(self) -> bool:
        """Anything unapplied, open or unpushed: worth a pass every ``RETRY_S``. Held writes
        (``Holds``) are not: they wait for their own ``next_deadline``."""
        return bool(self._backlog or self._open or self._commits.closed)

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
        if self.requests is None or self.requests.next_failure() is None:
            return
        held = self._holds.request_uids()
        problem = self.push_refused or (
            "the branch's commit or push failed; see its GitTargets' conditions"
        )
        self.requests.overdue(self.lease, problem, held)

    def _flush(self, force: bool) -> None:
        now = self._clock()
        c = self.config
        self._backlog[:0] = self._parking.due(now, force)  # handled again, oldest first
        due_held = self._holds.due(now, force)
        if due_held:
            self._retry_held(due_held)
        deferred = not force and self._awaiting_until() is not None
        due = [
            uid
            for uid, w in self._open.items()
            if force
            or (not deferred and is_due(w.window, now, c.commit_window_s, self._max_window))
            or (w.deadline is not None and now >= w.deadline)  # P6: a request's close
        ]
        for uid in due:
            self._commits.commit(self._open.pop(uid))
        if self._commits.closed:
            self._push()
        self._publish_counts()

    def _retry_held(self, due: list[GitTargetUid]) -> None:
        """Commit held GitTargets' writes if their keys work now; held again if not. The
        held GitTargets whose folders overlap a due one's are tried with it (each is held
        while another is, so one alone never goes): every key is asked for first, then the
        folders are committed deepest first, so a folder is committed only once no held
        folder overlaps it."""
        group = self._holds.group(due)
        taken = [w for w in (self._take_held(uid) for uid in group) if w]
        ready: list[tuple[list[OpenWindow], Signer]] = []
        with ExitStack() as keys:  # each key read once: the probe's file signs the commit
            for windows in taken:
                try:
                    path = keys.enter_context(self._signer(windows[0].target))
                except SigningUnavailable as err:
                    self._holds.hold(windows[0], windows[0].target, err)
                    for later in windows[1:]:
                        self._holds.hold(later, windows[0].target, None)
                    continue
                ready.append((windows, _already(path)))
            ready.sort(key=lambda r: depth(r[0][0].target.path), reverse=True)
            for index, (windows, signer) in enumerate(ready):
                if len(windows) == 1:
                    self._commits.commit(windows[0], signer)
                else:
                    rest = [w for ws, _ in ready[index + 1 :] for w in ws]
                    self._commit_in_order(windows, rest, signer)

    def _commit_in_order(
        self, windows: list[OpenWindow], later: list[OpenWindow], signer: Signer
    ) -> None:
        """P5 with P6: held windows of several authors, one commit each, oldest first. The
        work tree holds all their changes at once, so the folder is put back to HEAD and the
        windows' events are applied again, one window at a time, each committed before the
        next is applied (as a replay does, M7). The uncommitted writes of other GitTargets
        whose folders overlap this one's (``later`` of this retry, and open windows) are
        applied again after, still uncommitted. While a GitTarget overlapping it is still held
        nothing is rebuilt: every window is held again, as ``_commit`` would."""
        target = windows[0].target
        if self._holds.blocker(target) is not None:
            for window in windows:
                self._commits.commit(window, signer)  # held again, each window kept with its author
            return
        self.ws.discard(target.path or ".")
        self._folders.clear()  # their scans may hold what the discard removed
        for window in windows:
            self._apply_again(window)
            self._commits.commit(window, signer)
        for window in later + list(self._open.values()):
            if window.target.uid != target.uid and overlap(window.target.path, target.path):
                self._apply_again(window)

    def _take_held(self, uid: GitTargetUid) -> list[OpenWindow]:
        """A held GitTarget's windows with its open window last (its changes are in the same
        folder; merged into the last held one when it is the same author's), out of the hold;
        none for a GitTarget gone meanwhile: its writes go with it, as any event of a gone
        GitTarget (acknowledged unwritten). One the watcher does not serve for its key
        (``key_held``, or settings gone with its ``signing`` refusal standing) stays held, with
        its requests."""
        windows = self._holds.take(uid, self._open.pop(uid, None))
        current = self._configs.target(uid)
        if self._conditions.withdrawn_for_key(uid, current):  # held until it is served again
            self._holds.keep(uid, windows)
            return []
        if current is None:
            self.ws.discard(windows[0].target.path or ".")
            self._folders.pop(uid, None)
            self._events.ack(self.lease.branch, [e for w in windows for e in w.entries])
            return []
        target = current if current.path == windows[0].target.path else windows[0].target
        for window in windows:
            window.target = target
        return windows

    def _push(self) -> None:
        self._states.publish_push(self.lease, in_flight=True)
        for _ in range(MAX_PUSH_ATTEMPTS):
            result = self.ws.push(self.tip)
            metrics.PUSHES.labels("pushed" if result.pushed else "rejected").inc()
            if result.pushed:
                self.push_refused = None
                self._pushed()
                return
            log.info(
                "push rejected (%s); replaying on the new tip",
                result.summary,
                extra={"branch": self.bk},
            )
            self._replay()
            self.push_refused = f"push refused {MAX_PUSH_ATTEMPTS} times: {result.summary}"
        self._states.publish_push(self.lease, in_flight=False)

    def _pushed(self) -> None:
        head = self.ws.head()
        if head != self.tip:
            self._tips.pushed(head)
        self.tip = head
        if self.requests is not None:  # P6: recorded before the acknowledgement
            pushed = [(c.requests, c.sha) for c in self._commits.closed if c.requests]
            self.requests.finished(self.lease, pushed, head)
        entries = [e for closed in self._commits.closed for e in closed.entries]
        self._commits.closed.clear()
        self._events.ack(self.lease.branch, entries)
        self._states.publish_pushed(self.lease, head)

    def _replay(self) -> None:
        """Reset to the remote tip and make every unpushed write again (M7): the closed
        windows committed again (a window whose key fails now is held, with the later windows
        of its GitTarget), then the held and open writes, uncommitted, oldest first.

        The new tip may refuse a write the old one took (a ``.gittargetignore`` that hides it,
        a file that makes the folder unsupported, a symbolic link...): such a write is refused
        as it would be on arrival (M10: ``GitPathAccepted=False`` with the reason, a Refusal
        owed to a consenting applier), acknowledged, and left out of its window's commit and
        message, never dropped unseen (``_replay_window``)."""
        tip = self.ws.fetch()
        self._tips.found(tip, self.tip)
        self.tip = tip
        self.ws.reset(self.tip)
        self._folders.clear()
        self._states.publish_tip(self.lease, self.tip)
        held_before = self._holds.release_all()
        self._commits.closed[:] = [c for c in self._commits.closed if self._replay_closed(c)]
        for uid, held_windows, retry_at in held_before:
            held = [w for w in held_windows if self._replay_window(w)]
            if held:
                self._holds.rejoin(uid, held, retry_at)
        for uid, window in list(self._open.items()):
            if not self._replay_window(window):
                del self._open[uid]

    def _replay_closed(self, closed: ClosedWindow) -> bool:
        """Commit a closed window again on the new tip; False when it is not kept among the
        closed ones (held for its key, or nothing is left of it)."""
        window = OpenWindow(
            closed.target,
            open_window(self._clock()),
            closed.entries,
            closed.author,
            requests=closed.requests,
        )
        if not self._replay_window(window):
            return False  # every write of it refused now, and no CommitRequest waits on it
        return self._commits.again(closed, window)

    def _replay_window(self, window: OpenWindow) -> bool:
        """M7 with M10: apply a window's writes again on the new tip; the ones it refuses now
        are recorded as refusals and acknowledged, and leave the window. False when nothing
        is left of it (no write, no bound CommitRequest)."""
        refused = self._apply_again(window)
        if not refused:
            return True
        window.entries = [e for e in window.entries if all(e is not r for r in refused)]
        left = {e.entry_id for e in window.entries}  # a listing's other deletes still wait
        self._events.ack(self.lease.branch, [r for r in refused if r.entry_id not in left])
        return bool(window.entries or window.requests)

    def _apply_again(self, window: OpenWindow) -> list[StreamEntry]:
        """Apply a window's events to the work tree again; the entries refused now, each
        recorded as a refusal (a user sees it on the GitTarget: never a write lost unseen)."""
        refused: list[StreamEntry] = []
        for entry in window.entries:
            if entry.event:
                event = entry.event
                applied = apply_event(self.ws, window.target, event, self._folder(window.target))
                if applied.kind == "refused":
                    self._conditions.applied(window.target, event, applied)
                    refused.append(entry)
        return refused

    def _publish_counts(self, last_write_at: float | None = None) -> None:
        pending = len(self._backlog) + sum(len(w.entries) for w in self._open.values())
        pending += sum(len(c.entries) for c in self._commits.closed)
        pending += self._holds.pending()
        pending += self._parking.count()
        self._states.publish_counts(self.lease, len(self._open), pending, last_write_at)


def _already(path: Path | None) -> Signer:
    """A Signer that hands out a key file already read (or None: unsigned) for one commit."""

    def signer(target: TargetConfig) -> AbstractContextManager[Path | None]:
        return nullcontext(path)

    return signer


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
