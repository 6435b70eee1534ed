"""A branch's events in (M3, M8, M10, W1, P5, P6, T1, D2): each event of a slice of the backlog
is applied to the work tree and opens or extends its GitTarget's window, or is withheld,
refused, parked or dropped; a CommitRequest binds to its GitTarget's open window.

What made no write is acknowledged at once; a write waits for the push of its window. An event
whose audit fact may still come stops the slice: it and the rest wait in the backlog, so stream
order holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.branch_worker.apply_window import Admission
from services.branch_worker.applying import ApplierDesk
from services.branch_worker.backlog import Backlog
from services.branch_worker.commit_requests import Requests
from services.branch_worker.committing import Commits
from services.branch_worker.conditions import Conditions
from services.branch_worker.holds import Parking
from services.branch_worker.listings import missed_deletes
from services.branch_worker.waits import AwaitFact, FactWaits
from services.branch_worker.windows import OpenWindow
from services.branch_worker.worktree import WorkTree
from shared.decide.window import open_window
from shared.model.commit_requests import CommitRequestItem
from shared.model.config import BranchConfig, TargetConfig
from shared.model.ids import GitTargetUid
from shared.store.config import ConfigStore
from shared.store.leases import Lease
from shared.store.streams import EventStream, StreamEntry

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before


class ProviderChanged(Exception):
    """The branch's GitProvider changed since this owner took it (T1): give the branch back,
    so the next owner writes with the new GitProvider's credentials and committer."""


class Intake:
    """One owner's application of its branch's events to the work tree."""

    def __init__(
        self,
        lease: Lease,
        config: BranchConfig,
        tree: WorkTree,
        *,
        open_windows: dict[GitTargetUid, OpenWindow],
        backlog: Backlog,
        waits: FactWaits,
        parking: Parking,
        conditions: Conditions,
        commits: Commits,
        guard: Admission,
        desk: ApplierDesk,
        requests: Requests,
        configs: ConfigStore,
        events: EventStream,
        clock: Callable[[], float],
    ) -> None:
        self._lease = lease
        self._config = config
        self._tree = tree
        self._open = open_windows
        self._backlog = backlog
        self._waits = waits
        self._parking = parking
        self._conditions = conditions
        self._commits = commits
        self._guard = guard  # W1: withholds the applier's revert of an API edit
        self._desk = desk
        self._requests = requests  # P6: CommitRequests bound to windows
        self._configs = configs
        self._events = events
        self._clock = clock
        #: The GitTargets' settings, read once per GitTarget per slice.
        self._targets: dict[GitTargetUid, TargetConfig | None] = {}

    def next_slice(self) -> bool:
        """Apply the backlog's next slice; True when it made a write that is not parked."""
        self._waits.new_pass(self._backlog)  # an event's grace starts when it is first seen (N5)
        batch = self._backlog.next_slice()
        self._targets = {}
        self._parking.new_slice()
        done: list[StreamEntry] = []
        wrote = False
        parked = self._parking.count()
        for index, entry in enumerate(batch):
            try:
                made = self._apply(entry)
            except AwaitFact:  # stream order holds: this event and the rest wait together
                self._backlog.put_back(batch[index:])
                break
            if not made:
                done.append(entry)
            elif self._parking.count() == parked:
                wrote = True
            parked = self._parking.count()
        else:
            self._waits.settled()
        self._events.ack(self._lease.branch, done)
        return wrote

    def _target(self, uid: GitTargetUid) -> TargetConfig | None:
        if uid not in self._targets:
            self._targets[uid] = self._configs.target(uid)
        return self._targets[uid]

    def _apply(self, entry: StreamEntry) -> bool:
        """True when the entry made a write (and is now pending)."""
        if entry.request is not None:
            request = entry.request
            target = self._target(request.target.uid)
            return self._request(entry, self._waits.submitter(target, entry, request))
        item = entry.listing or entry.event
        if item is None:
            return False  # malformed
        target = self._target(item.target.uid)
        if target is None or target.key_held:
            return self._parking.park(entry, target)  # gone (dropped), or not served for its key
        if not self._config.writes_for(target):
            return self._not_ours(target)
        if entry.listing is None:
            return self._write(entry, target)
        wrote = False
        for event in missed_deletes(entry.listing, self._tree.folder(target)):  # D2
            wrote = self._write(StreamEntry(entry.entry_id, event, entry.listing), target) or wrote
        return wrote

    def _write(self, entry: StreamEntry, target: TargetConfig) -> bool:
        """Apply one object event; True when it made a write (and is now pending)."""
        event = entry.event
        assert event is not None
        # W2: a same-second tie waits for its audit fact first (attribution on), which may
        # say whose write it is; any other event is judged before its fact is waited for
        tie = self._guard.is_tie(target, event)
        writer = self._waits.tie_writer(target, entry, event) if tie else None
        judged = self._waits.judged(entry.entry_id) and not tie  # admitted, then waited
        if not judged and not self._guard.admits(
            target,
            event,
            lambda: self._tree.only_in_history(target, event),
            lambda: self._tree.held_as_is(target, event),
            writer,
        ):
            # W1: withheld; Git keeps the API edit (or the tip's newer content, when the
            # applier applied an older commit). A Kustomization's CatchUp or ForeignCommit
            # (owed by the push) applies it back; an Application is owed a Repair for it.
            self._desk.on_withheld(target)
            return False
        author = self._waits.author(target, entry, event)
        current = self._open.get(target.uid)
        if current is not None and current.author != author:  # a window holds one author
            self._commits.commit(self._open.pop(target.uid))
            current = None
        applied = self._tree.apply(target, event)
        self._conditions.applied(target, event, applied)
        if applied.kind != "write":
            return False
        now = self._clock()
        if current is None:
            self._open[target.uid] = OpenWindow(target, open_window(now), [entry], author)
        else:
            current.window = current.window.with_write(now)
            current.entries.append(entry)
        if target.window_s(self._config) <= 0:  # commitWindow 0s: a commit per write
            self._commits.commit(self._open.pop(target.uid))
        return True

    def _request(self, entry: StreamEntry, request: CommitRequestItem) -> bool:
        """P6: bind a CommitRequest to its GitTarget's open window; True while it waits for
        the push of that window (its entry is acknowledged with the window's)."""
        window = self._open.get(request.target.uid)
        if not self._requests.receive(self._lease, request, window, self._tree.tip or ""):
            return False
        assert window is not None
        window.entries.append(entry)
        return True

    def _not_ours(self, target: TargetConfig) -> bool:
        """T1: a GitTarget of another GitProvider never writes with this branch's Secret. The
        watcher serves only the holder's GitTargets, so this is a handover (published config
        changed: start over with it) or a record it withdraws (dropped unwritten)."""
        if self._configs.branch(self._lease.branch) != self._config:
            raise ProviderChanged(f"branch {self._lease.branch}: its GitProvider changed")
        log.warning(
            "dropped an event of GitTarget %s/%s: the branch is written by another GitProvider",
            target.namespace,
            target.name,
            extra={"branch": self._lease.branch},
        )
        return False
