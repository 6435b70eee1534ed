"""``GitTarget.status.applier`` (S3), published as soon as the ledger moves (O6).

The dispatcher records each request and outcome in the ledger, keyed by GitTarget uid; this
module copies the entry into the GitTarget's status together with the applier as resolved.
A person (and ``kubectl get gt -o wide``) should see the last request within seconds, so
besides every reconcile pass a light pass runs every ``Settings.applier_status_period``: each
ledger write names its entry in a set of changed entries, the pass takes that set (one
command), asks for those entries' versions and reads and writes only the entries whose version
moved. An entry is polled besides when its GitTarget is tracked anew or lists another status
or applier than it did, when its write failed (tried again at the next pass), and every entry
every ``FULL_EVERY_S`` all the same (a change lost with Redis's data). Status is written only
when it would change. The pass polled every tracked entry, twice a second, and the reconcile
pass read every entry again: at five GitTargets with an applier a branch, three commands a
second per idle branch (issue 29's budget is half of one).

Writes are tied to the incarnation they were computed for (``StatusWriter.write_field`` tests
``metadata.uid``), so a GitTarget recreated under the same name never shows its
predecessor's request; a write that finds the object gone or replaced forgets it until the
next reconcile pass tracks its successor.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.kube.errors import KubeError, KubePermanent
from shared.kube.kinds import GIT_TARGETS
from shared.kube.status import StatusWriter
from shared.model.config import ApplierRef
from shared.model.crds import GitTargetView, Meta
from shared.model.ids import GitTargetUid
from shared.model.ledger import LastRequest
from shared.store.ledger import Ledger

logger = logging.getLogger(__name__)

FIELD = "applier"
#: Longest between two polls of every tracked entry's version.
FULL_EVERY_S = 300.0  # issue 29: a safety net; at 60 s it was a fifth of the idle cost


def applier_status(ref: ApplierRef, entry: LastRequest | None) -> dict[str, Any]:
    """``status.applier``: the applier as resolved, and the last request when there is one."""
    value: dict[str, Any] = {
        "kind": ref.kind,
        "name": ref.name,
        "namespace": ref.namespace,
        "clusterProvider": ref.cluster_provider,
    }
    if entry is not None:
        value["lastRequest"] = entry.to_status()
    return value


@dataclass(frozen=True, slots=True)
class _Tracked:
    meta: Meta
    ref: ApplierRef


class ApplierStatus:
    """Keeps every GitTarget's ``status.applier`` equal to its ledger entry."""

    def __init__(
        self, writer: StatusWriter, ledger: Ledger, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._writer = writer
        self._ledger = ledger
        self._clock = clock
        self._lock = threading.Lock()
        self._tracked: dict[GitTargetUid, _Tracked] = {}
        self._stored: dict[GitTargetUid, Mapping[str, Any] | None] = {}
        self._seen: dict[GitTargetUid, int] = {}  # ledger version last published
        self._due: set[GitTargetUid] = set()  # polled at the next pass besides the changed
        self._full_at: float | None = None

    def track(self, targets: Sequence[GitTargetView]) -> int:
        """Follow these GitTargets from now on and publish what differs; returns the writes.

        Called on every reconcile pass with what it listed: an entry is read again when its
        GitTarget is new, names another applier or lists another status than this pass last
        knew (the listed status may be older than our last write, which costs at most a no-op
        write).
        """
        with self._lock:
            tracked = {t.uid: _Tracked(t.meta, t.applier) for t in targets if t.applier}
            stored = {t.uid: t.applier_status for t in targets}
            for uid, now in tracked.items():
                old = self._tracked.get(uid)
                if old is None or old.ref != now.ref or self._stored.get(uid) != stored[uid]:
                    self._due.add(uid)
                    self._seen.pop(uid, None)
            self._tracked, self._stored = tracked, stored
            writes = sum(self._clear(t) for t in targets if t.applier is None)
            return writes + self._sync()

    def sync(self) -> int:
        """The light pass: publish the entries whose ledger version moved; returns the writes."""
        with self._lock:
            return self._sync()

    def _sync(self) -> int:
        changed = self._ledger.changes()  # taken even when nothing is tracked
        now = self._clock()
        if self._full_at is None or now - self._full_at >= FULL_EVERY_S:
            self._full_at = now
            uids = sorted(self._tracked)
        else:
            uids = sorted(set(self._tracked) & (changed | self._due))
        self._due = set()
        versions = self._ledger.versions(uids) if uids else {}
        moved = [uid for uid in uids if self._seen.get(uid) != versions[uid]]
        written = sum(self._publish(uid, versions[uid]) for uid in moved)
        self._due.update(
            u for u in moved if u in self._tracked and self._seen.get(u) != versions[u]
        )
        return written

    def _publish(self, uid: GitTargetUid, polled: int) -> bool:
        tracked = self._tracked[uid]
        try:
            entry, version = self._ledger.last_request(uid)
        except ValueError as err:
            # Not a LastRequest (written before the ledger had its record): shown once the next
            # request replaces it. Marked seen, so it is reported once and not on every pass.
            self._seen[uid] = polled
            logger.warning("ledger entry of GitTarget %s not shown: %s", uid, err)
            return False
        wanted = applier_status(tracked.ref, entry)
        if self._stored.get(uid) == wanted:
            self._seen[uid] = version
            return False
        if not self._write(tracked.meta, wanted):
            return False
        self._stored[uid] = wanted
        self._seen[uid] = version
        return True

    def _clear(self, target: GitTargetView) -> bool:
        """A GitTarget that no longer names an applier shows none."""
        return target.applier_status is not None and self._write(target.meta, None)

    def _write(self, meta: Meta, value: dict[str, Any] | None) -> bool:
        try:
            self._writer.write_field(GIT_TARGETS, meta, FIELD, value)
        except KubePermanent as err:  # gone, or replaced by a new incarnation (uid test)
            logger.info(
                "status.applier of GitTarget %s/%s not written: %s", meta.namespace, meta.name, err
            )
            self._tracked.pop(GitTargetUid(meta.uid), None)
            return False
        except KubeError as err:  # retried on the next pass (its version is not marked seen)
            logger.warning(
                "status.applier of GitTarget %s/%s not written: %s", meta.namespace, meta.name, err
            )
            return False
        return True
