"""``status.lastHandledReconcileAt``: a reconcile request answered once its resync is out (P8).

A person (or ``gitops-reverser reconcile``) sets the annotation
``reconcile.gitopsreverser.io/requestedAt`` on a GitTarget. Its value reaches every watch of
the GitTarget in its spec (``WatchSpec.resync``), which restarts the watch; a watch that has not
handled the value lists again, publishes every object and the names it found, and records the
value as handled (``WatchState.mark_resynced``). Once every watch of the GitTarget recorded it,
the whole folder's resync is on the branch's stream, and status shows the value: the branch's
owner commits what differs within its commit window, as for any edit.

The reconcile pass tracks the GitTargets whose request status does not show handled yet; the
light pass (every ``Settings.applier_status_period``) checks them in one Redis round trip each
and writes status as soon as they are done, so a waiting person sees the answer within seconds.
A GitTarget with no watch has nothing to resync: its request is answered at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shared.decide.watches import WatchKey, WatchSpec
from shared.kube.errors import KubeError
from shared.kube.kinds import GIT_TARGETS
from shared.kube.status import StatusWriter
from shared.model.crds import GitTargetView, Meta
from shared.model.ids import GitTargetUid
from shared.model.target_controls import LAST_HANDLED_FIELD
from shared.store.watches import WatchAddress, WatchState

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Request:
    meta: Meta
    value: str
    watches: tuple[WatchAddress, ...]


class ReconcileRequests:
    """The standing reconcile requests, answered in status once handled."""

    def __init__(self, writer: StatusWriter, state: WatchState) -> None:
        self._writer = writer
        self._state = state
        self._lock = threading.Lock()
        self._pending: dict[GitTargetUid, _Request] = {}

    def track(
        self,
        targets: Iterable[GitTargetView],
        served: Iterable[str],
        desired: Mapping[WatchKey, WatchSpec],
    ) -> int:
        """Follow the served GitTargets' unanswered requests (as this pass listed them) and
        answer those already handled; returns the status writes."""
        watches: dict[str, list[WatchAddress]] = {}
        for key in desired:
            address = WatchAddress(key.uid, key.group_resource, key.namespace)
            watches.setdefault(key.uid, []).append(address)
        live = set(served)
        pending = {
            t.uid: _Request(t.meta, t.controls.resync, tuple(watches.get(t.uid, ())))
            for t in targets
            if t.meta.uid in live and t.controls.reconcile_due
        }
        with self._lock:
            self._pending = pending
            return self._answer()

    def sync(self) -> int:
        """The light pass: answer the requests whose watches have all handled them."""
        with self._lock:
            return self._answer()

    def _answer(self) -> int:
        written = 0
        for uid, request in list(self._pending.items()):
            if not _handled(self._state.resynced_many(request.watches), request.value):
                continue
            if self._write(request):
                written += 1
            del self._pending[uid]
        return written

    def _write(self, request: _Request) -> bool:
        meta = request.meta
        try:
            self._writer.write_field(GIT_TARGETS, meta, LAST_HANDLED_FIELD, request.value)
        except KubeError as err:  # gone, replaced, or the API failed: the next pass tracks it
            logger.warning(
                "status.%s of GitTarget %s/%s not written: %s",
                LAST_HANDLED_FIELD,
                meta.namespace,
                meta.name,
                err,
            )
            return False
        logger.info(
            "GitTarget %s/%s resynced for reconcile request %s",
            meta.namespace,
            meta.name,
            request.value,
            extra={"gittarget": f"{meta.namespace}/{meta.name}"},
        )
        return True


def _handled(recorded: Sequence[str], value: str) -> bool:
    """Every watch recorded ``value`` (a GitTarget without a watch: at once)."""
    return all(r == value for r in recorded)
