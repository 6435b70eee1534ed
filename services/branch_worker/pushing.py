"""Pushing a branch's commits (M7, M8, T4, U1): compare-and-swap against the tip the commits
were built on; a refused push fetches the new tip, resets to it and makes every unpushed write
again (a replay), then pushes again, up to ``MAX_PUSH_ATTEMPTS`` times per flush.

A pushed commit's events are acknowledged only after the push (M8); the CommitRequests bound
to its windows are recorded first (P6). The new tip may refuse a write the old one took: such
a write is refused as it would be on arrival (M10) and acknowledged, never dropped unseen.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from services.branch_worker import metrics
from services.branch_worker.commit_requests import Requests
from services.branch_worker.committing import Commits
from services.branch_worker.conditions import Conditions
from services.branch_worker.holds import Holds
from services.branch_worker.pushes import pushes_of
from services.branch_worker.tips import Tips
from services.branch_worker.windows import ClosedWindow, OpenWindow
from services.branch_worker.worktree import WorkTree
from shared.decide.window import open_window
from shared.model.ids import GitTargetUid
from shared.store.branch_state import BranchStates
from shared.store.leases import Lease
from shared.store.streams import EventStream
from shared.store.target_health import TargetHealth

log = logging.getLogger("services.branch_worker.branch")  # the owner's log, as before

#: Push attempts in one flush before the branch waits for its next wake.
MAX_PUSH_ATTEMPTS = 5


class Pushes:
    """One owner's pushes of its closed windows' commits, and their replays."""

    def __init__(
        self,
        lease: Lease,
        tree: WorkTree,
        *,
        open_windows: dict[GitTargetUid, OpenWindow],
        commits: Commits,
        holds: Holds,
        conditions: Conditions,
        tips: Tips,
        states: BranchStates,
        events: EventStream,
        requests: Requests,
        clock: Callable[[], float],
        health: TargetHealth,
    ) -> None:
        self._lease = lease
        self._tree = tree
        self._open = open_windows  # the owner's: a replay makes them again, or drops them
        self._commits = commits
        self._holds = holds
        self._conditions = conditions
        self._tips = tips
        self._states = states
        self._events = events
        self._requests = requests
        self._clock = clock
        #: What each push carried, per GitTarget (the watcher's Ready message and metrics).
        self._health = health
        #: Why the last push did not land, while the remote keeps refusing it (T4); None once
        #: a push lands.
        self.refused: str | None = None

    def push(self) -> None:
        """Push the closed windows' commits, replaying them on each new tip that refuses them."""
        self._states.publish_push(self._lease, in_flight=True)
        for _ in range(MAX_PUSH_ATTEMPTS):
            result = self._tree.ws.push(self._tree.tip)
            metrics.PUSHES.labels("pushed" if result.pushed else "rejected").inc()
            if result.pushed:
                self.refused = None
                self._pushed()
                return
            log.info(
                "push rejected (%s); replaying on the new tip",
                result.summary,
                extra={"branch": self._lease.branch},
            )
            self._replay()
            self.refused = f"push refused {MAX_PUSH_ATTEMPTS} times: {result.summary}"
        self._states.publish_push(self._lease, in_flight=False)

    def _pushed(self) -> None:
        head = self._tree.ws.head()
        if head != self._tree.tip:
            self._tips.pushed(head)
        self._tree.tip = head
        pushed = [(c.requests, c.sha) for c in self._commits.closed if c.requests]
        self._requests.finished(self._lease, pushed, head)  # P6: before the acknowledgement
        self._health.record_pushes(pushes_of(self._commits.closed, self._clock()))
        entries = [e for closed in self._commits.closed for e in closed.entries]
        self._commits.closed.clear()
        self._events.ack(self._lease.branch, entries)
        self._states.publish_pushed(self._lease, head, at=self._clock())

    def _replay(self) -> None:
        """Reset to the remote tip and make every unpushed write again (M7): the closed
        windows committed again (a window whose key fails now is held, with the later windows
        of its GitTarget), then the held and open writes, uncommitted, oldest first.

        The new tip may refuse a write the old one took (a ``.gittargetignore`` that hides it,
        a file that makes the folder unsupported, a symbolic link...): such a write is refused
        as it would be on arrival (M10: ``GitPathAccepted=False`` with the reason, a Refusal
        owed to a consenting applier), acknowledged, and left out of its window's commit and
        message, never dropped unseen (``_replay_window``)."""
        tip = self._tree.fetch()
        self._tips.found(tip, self._tree.tip)
        self._tree.reset(tip)
        self._states.publish_tip(self._lease, tip)
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
        refused = self._tree.apply_again(window, self._conditions)
        if not refused:
            return True
        window.entries = [e for e in window.entries if all(e is not r for r in refused)]
        left = {e.entry_id for e in window.entries}  # a listing's other deletes still wait
        self._events.ack(self._lease.branch, [r for r in refused if r.entry_id not in left])
        return bool(window.entries or window.requests)
