"""``GitTarget.status.remote``: the branch's remote commit as its owner last verified it (P10).

The branch's owner publishes each verification with the branch's state (a push accepted, a
read of the ref advertisement), and names the branch in a set of changed verifications in the
same step. The reconcile pass tracks the served GitTargets with their branch and what status
shows; the light pass (every ``Settings.applier_status_period``) takes that set (one command)
and reads the verifications of those branches alone, and writes status where the pure rule
(``shared.decide.remote_status``, which reads nothing but the verification and the status)
says it is due, so a push shows within seconds. A branch is read besides when one of its
GitTargets is tracked anew or shows another status than it did, when a write of its status
failed (tried again), and every branch every ``FULL_EVERY_S`` all the same (a change lost
with Redis's data). It used to read every branch's verification every pass: 0.5 commands per
branch a second, as much as issue 29's whole budget for an idle branch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from shared.decide.remote_status import remote_status
from shared.decide.watches import ServedTarget
from shared.kube.errors import KubeError, KubePermanent
from shared.kube.kinds import GIT_TARGETS
from shared.kube.status import StatusWriter
from shared.model.crds import Meta
from shared.model.ids import BranchKey, GitTargetUid
from shared.store.branch_state import BranchStates

logger = logging.getLogger(__name__)

FIELD = "remote"
#: Longest between two reads of every tracked branch's verification.
FULL_EVERY_S = 300.0  # issue 29: a safety net; at 60 s it was a fifth of the idle cost


@dataclass(slots=True)
class _Tracked:
    meta: Meta
    branch: BranchKey
    stored: Mapping[str, Any] | None


class RemoteStatus:
    """Keeps every served GitTarget's ``status.remote`` following its branch."""

    def __init__(
        self,
        writer: StatusWriter,
        states: BranchStates,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._writer = writer
        self._states = states
        self._clock = clock
        self._lock = threading.Lock()
        self._tracked: dict[GitTargetUid, _Tracked] = {}
        #: Branches to read at the next pass besides the changed ones (see the module).
        self._due: set[BranchKey] = set()
        self._full_at: float | None = None

    def track(self, served: Iterable[ServedTarget]) -> int:
        """Follow these GitTargets (as this pass listed them) and write what is due."""
        tracked = {
            s.target.uid: _Tracked(s.target.meta, s.branch, s.target.controls.remote)
            for s in served
        }
        with self._lock:
            for uid, new in tracked.items():
                old = self._tracked.get(uid)
                if old is None or (old.branch, old.stored) != (new.branch, new.stored):
                    self._due.add(new.branch)
            self._tracked = tracked
            return self._sync()

    def sync(self) -> int:
        """The light pass: write what is due; returns the writes."""
        with self._lock:
            return self._sync()

    def _sync(self) -> int:
        branches = {t.branch for t in self._tracked.values()}
        changed = self._states.verified_changes()  # taken even when nothing is tracked
        now = self._clock()
        if self._full_at is None or now - self._full_at >= FULL_EVERY_S:
            self._full_at, wanted = now, branches
        else:
            wanted = branches & (changed | self._due)
        self._due = set()
        if not wanted:
            return 0
        verified = self._states.verified_many(sorted(wanted))
        written = 0
        for uid, tracked in list(self._tracked.items()):
            if tracked.branch not in wanted:
                continue
            status = remote_status(verified.get(tracked.branch), tracked.stored)
            if status is None:
                continue
            if self._write(uid, tracked, status):
                written += 1
            elif uid in self._tracked:  # the API failed: tried again at the next pass
                self._due.add(tracked.branch)
        return written

    def _write(self, uid: GitTargetUid, tracked: _Tracked, wanted: dict[str, Any]) -> bool:
        meta = tracked.meta
        try:
            self._writer.write_field(GIT_TARGETS, meta, FIELD, wanted)
        except KubePermanent as err:  # gone or replaced: the next pass tracks its successor
            logger.info(
                "status.remote of GitTarget %s/%s not written: %s", meta.namespace, meta.name, err
            )
            del self._tracked[uid]
            return False
        except KubeError as err:  # tried again on the next pass
            logger.warning(
                "status.remote of GitTarget %s/%s not written: %s", meta.namespace, meta.name, err
            )
            return False
        tracked.stored = wanted
        return True
