"""Held writes released (P6, P5, T4): when a held GitTarget's signing key is due to be asked
for again, its windows (and those of every held GitTarget whose folder overlaps its own) are
committed if their keys work now, and held again if not.

Every key is asked for first; then the folders are committed deepest first, so a folder is
committed only once no held folder overlaps it. What waits, and when, is the hold's
(``holds.py``); this part takes windows out of it and commits them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, ExitStack, nullcontext
from pathlib import Path

from services.branch_worker.committing import Commits
from services.branch_worker.conditions import Conditions
from services.branch_worker.holds import Holds
from services.branch_worker.signing import Signer, SigningUnavailable
from services.branch_worker.windows import OpenWindow, depth, overlap
from services.branch_worker.worktree import WorkTree
from shared.model.config import TargetConfig
from shared.model.ids import GitTargetUid
from shared.store.config import ConfigStore
from shared.store.leases import Lease
from shared.store.streams import EventStream


class Releases:
    """One owner's retries of its held windows."""

    def __init__(
        self,
        lease: Lease,
        tree: WorkTree,
        *,
        open_windows: dict[GitTargetUid, OpenWindow],
        commits: Commits,
        holds: Holds,
        conditions: Conditions,
        configs: ConfigStore,
        events: EventStream,
        signer: Signer,
    ) -> None:
        self._lease = lease
        self._tree = tree
        self._open = open_windows  # the owner's: a held GitTarget's open window joins its hold
        self._commits = commits
        self._holds = holds
        self._conditions = conditions
        self._configs = configs
        self._events = events
        #: The key file each GitTarget's commits are signed with (``spec.commit.signing``).
        self._signer = signer

    def retry(self, due: list[GitTargetUid]) -> None:
        """Commit held GitTargets' writes if their keys work now; held again if not. The
        held GitTargets whose folders overlap a due one's are tried with it (each is held
        while another is, so one alone never goes): every key is asked for first, then the
        folders are committed deepest first, so a folder is committed only once no held
        folder overlaps it."""
        group = self._holds.group(due)
        taken = [w for w in (self._take(uid) for uid in group) if w]
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
        nothing is rebuilt: every window is held again, as ``Commits.commit`` would."""
        target = windows[0].target
        if self._holds.blocker(target) is not None:
            for window in windows:
                self._commits.commit(window, signer)  # held again, each window kept with its author
            return
        self._tree.discard(target.path)  # every folder read again: their scans may hold it
        for window in windows:
            self._tree.apply_again(window, self._conditions)
            self._commits.commit(window, signer)
        for window in later + list(self._open.values()):
            if window.target.uid != target.uid and overlap(window.target.path, target.path):
                self._tree.apply_again(window, self._conditions)

    def _take(self, uid: GitTargetUid) -> list[OpenWindow]:
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
            self._tree.discard(windows[0].target.path, uid)
            self._events.ack(self._lease.branch, [e for w in windows for e in w.entries])
            return []
        target = current if current.path == windows[0].target.path else windows[0].target
        for window in windows:
            window.target = target
        return windows


def _already(path: Path | None) -> Signer:
    """A Signer that hands out a key file already read (or None: unsigned) for one commit."""

    def signer(target: TargetConfig) -> AbstractContextManager[Path | None]:
        return nullcontext(path)

    return signer
