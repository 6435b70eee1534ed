"""``onRefusal: PushEmptyCommit`` (P11) on one owned branch: what refused edits owe, and the
empty commit that pays it.

A refused edit of a GitTarget that asks for it (``asks_empty_commit``: no applier named, not
suspended) is noted with whether the folder holds a file for the object; on each wake the owner
asks the pure rule (``shared.decide.empty_commit``) whether to push one empty commit now, and
does: on the tip it builds on, by the GitProvider's committer, compare-and-swap like any push.
A push that loses the race follows the new tip instead: the branch moved, which is what the
empty commit was for. Nothing is read or written while nothing is owed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from services.branch_worker import metrics
from services.branch_worker.tips import Tips
from services.branch_worker.worktree import WorkTree
from shared.decide.empty_commit import (
    EmptyCommits,
    Hold,
    PushEmpty,
    Settle,
    asks_empty_commit,
    decide,
    emptied,
    owe,
    settled,
)
from shared.decide.quiet import is_quiet
from shared.git.empty_commit import commit_empty
from shared.git.workspace import Committer
from shared.model.config import BranchConfig, TargetConfig
from shared.model.events import ObjectEvent
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.leases import Lease

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before


class EmptyCommitter:
    """One owner's empty commits for refused edits (P11)."""

    def __init__(
        self,
        lease: Lease,
        config: BranchConfig,
        tree: WorkTree,
        *,
        states: BranchStates,
        configs: ConfigStore,
        clock: Callable[[], float],
    ) -> None:
        self._lease = lease
        self._config = config
        self._tree = tree
        self._states = states
        self._configs = configs
        self._clock = clock
        self._state = EmptyCommits()
        #: When the rate limit lets the next one go, while one waits on it.
        self.next_wake: float | None = None

    def refused(self, target: TargetConfig, event: ObjectEvent) -> None:
        """A refused edit of ``target``: owed an empty commit if it asks for one. One that
        changes no value (the folder holds the object as it came: the reconciler's own revert
        after the last empty commit, say) reverts nothing and owes nothing (W2's reasoning)."""
        if not asks_empty_commit(target):
            return
        oid = event.object_id
        try:
            folder = self._tree.folder(target)
            filed = (oid.group, oid.kind, oid.namespace, oid.name) in set(folder.identities())
            if filed and event.operation != "DELETE" and self._tree.held_as_is(target, event):
                return
        except Exception:  # a folder that cannot be read holds no file the apply could use
            filed = False
        self._state = owe(self._state, str(target.uid), filed, self._tree.tip)

    def wake(self, busy: bool, tips: Tips) -> None:
        """Push one empty commit when the rule says so (nothing is read while none is owed)."""
        self.next_wake = None
        if not self._state.owed:
            return
        quiet = not busy and is_quiet(self._states.read(self._lease.branch).view())
        targets = self._configs.targets_of(self._lease.branch)
        asking = [str(t.uid) for t in targets if asks_empty_commit(t)]
        decision = decide(
            self._state, asking=asking, quiet=quiet, now=self._clock(), tip=self._tree.tip
        )
        if isinstance(decision, Settle):
            self._state = settled(self._state)
        elif isinstance(decision, Hold):
            self.next_wake = decision.until
        elif isinstance(decision, PushEmpty):
            self._push(decision, targets, tips)

    def _push(self, decision: PushEmpty, targets: Sequence[TargetConfig], tips: Tips) -> None:
        names = [f"{t.namespace}/{t.name}" for t in targets if str(t.uid) in decision.uids]
        message = "Apply again after refused edits: " + ", ".join(names)
        committer = Committer(self._config.committer_name, self._config.committer_email)
        base = self._tree.tip
        self._states.publish_push(self._lease, in_flight=True)
        try:
            sha = commit_empty(self._tree.ws, message, committer)
            try:
                result = self._tree.ws.push(base)
            except Exception:
                self._tree.reset(base)  # never left under the next write, pushed later
                raise
            metrics.PUSHES.labels("pushed" if result.pushed else "rejected").inc()
            if result.pushed:
                tips.pushed(sha)
                self._tree.tip = sha
                self._states.publish_pushed(self._lease, sha)
                self._state = emptied(self._state, self._clock())
                log.info(
                    "empty commit %s pushed for refused edits of %s",
                    sha,
                    ", ".join(names),
                    extra={"branch": self._lease.branch, "commit": sha},
                )
                return
            tip = self._tree.fetch()  # someone else moved the branch: it moved, as asked
            tips.found(tip, base)
            self._tree.reset(tip)
            self._states.publish_tip(self._lease, tip)
            self._state = settled(self._state)
        finally:
            self._states.publish_push(self._lease, in_flight=False)
