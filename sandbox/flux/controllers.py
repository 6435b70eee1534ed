"""``FluxControllers``: the source-controller and kustomize-controller doubles, wired up.

Two ways to drive them, over the same reconcilers and the same wake rules (``triggers``):

- ``start()``: background threads, as the real controllers run. A list+watch per kind feeds
  every event through the F1/F2 predicates (a new generation or requestedAt token wakes the
  object at once, a new artifact revision wakes the Kustomizations that read it, any other
  edit wakes nothing); one worker reconciles whatever is due, one object at a time, and
  blocks on the schedule's condition variable until the next wake or interval.
- ``reconcile_due()``: one deterministic step for tests with an injected clock: list both
  kinds (the same predicates decide what a change wakes), reconcile everything due at
  ``clock()``, and repeat while that woke more (a fetch waking its Kustomizations), then
  return the records of what was done.

Everything the doubles did is in ``log`` (``activity.ActivityLog``), which tests await.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError
from urllib3.exceptions import HTTPError

from sandbox.flux.activity import FAILED, GIT_REPOSITORY, KUSTOMIZATION, ActivityLog, Record
from sandbox.flux.gitsource import GitCache
from sandbox.flux.kubeapi import FluxApi
from sandbox.flux.kustomize import KustomizeReconciler
from sandbox.flux.pacing import Pacing, Stopping, flux_default
from sandbox.flux.schedule import Outcome, Schedule
from sandbox.flux.source import SourceReconciler
from sandbox.flux.storage import Storage
from sandbox.flux.triggers import (
    ObjectKey,
    ObjectView,
    key_of,
    revision_changed,
    revision_wakes,
    view_of,
    wakes,
)
from sandbox.flux.watching import KindWatcher

logger = logging.getLogger(__name__)

KINDS = (GIT_REPOSITORY, KUSTOMIZATION)
# reconcile_due lists Kustomizations first, so a source's revision change is judged against
# their latest status (F2's skip rule), as the watch cache would have it by then.
RESYNC_ORDER = (KUSTOMIZATION, GIT_REPOSITORY)
API_RETRY_S = 1.0  # an API error during a reconcile: try that object again after this
#: Errors a reconcile can meet talking to the API server or the disk: recorded, retried.
TRANSIENT = (ApiException, DynamicApiError, HTTPError, OSError)
MAX_ROUNDS = 10  # reconcile_due rounds (each may wake more); more means a wake loop
STOP_TIMEOUT_S = 30.0


class FluxControllers:
    """source-controller and kustomize-controller doubles against one API server."""

    def __init__(
        self,
        api_client: client.ApiClient,
        workdir: Path,
        *,
        clock: Callable[[], float] = time.time,
        namespace: str | None = None,
        pacing: Pacing | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._log = ActivityLog()
        self._pacing = flux_default() if pacing is None else pacing
        self._stop = threading.Event()
        self._api = FluxApi(api_client, workdir, namespace)
        storage = Storage(workdir / "storage")
        self._reconcilers: dict[str, Callable[[ObjectKey], Outcome]] = {
            GIT_REPOSITORY: SourceReconciler(
                self._api, GitCache(workdir / "git"), storage, clock, self._log
            ).reconcile,
            KUSTOMIZATION: KustomizeReconciler(
                self._api, storage, clock, self._log, pacing=self._pacing, stop=self._stop
            ).reconcile,
        }
        self._schedule = Schedule()
        self._seen: dict[ObjectKey, ObjectView] = {}
        self._seen_lock = threading.Lock()
        self._busy = threading.Lock()
        self._watchers: list[KindWatcher] = []
        self._worker: threading.Thread | None = None

    @property
    def log(self) -> ActivityLog:
        """Every fetch, apply, failure and suspended no-op, in order."""
        return self._log

    @property
    def pacing(self) -> Pacing:
        """How slowly applies go (``sandbox.flux.pacing``); close ``pacing.gate`` to hold every
        Kustomization's apply, await ``pacing.holding``, open the gate to let it go."""
        return self._pacing

    # lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Watch both kinds and reconcile in the background until ``stop()``."""
        if self._worker is not None:
            raise RuntimeError("the Flux doubles are already running")
        self._watchers = [
            KindWatcher(kind, self._api, self._resync, self._handle) for kind in KINDS
        ]
        for watcher in self._watchers:
            watcher.start()
        self._worker = threading.Thread(target=self._work, name="flux-worker", daemon=True)
        self._worker.start()

    def stopping(self) -> None:
        """Announce ``stop()``: the API server may go first without its closed watches being
        reported as failures. Nothing new is reconciled from now on, and the reconcile in
        hand finishes before this returns, while the API server and the Git host still answer
        (stopping them under it printed connection errors at the end of ``make demo``)."""
        for watcher in self._watchers:
            watcher.stopping()
        self._schedule.close()
        if self._worker is not None:
            self._worker.join(STOP_TIMEOUT_S)

    def stop(self) -> None:
        """Stop watching; the reconcile in progress (if any) finishes first, or is abandoned
        while it waits at the pacing's gate or in a pause."""
        self._stop.set()
        self._schedule.close()
        for watcher in self._watchers:
            watcher.stop()
        if self._worker is not None:
            self._worker.join(STOP_TIMEOUT_S)

    def reconcile_due(self) -> list[Record]:
        """List, reconcile everything due at ``clock()`` (repeating while that wakes more)."""
        mark = self._log.mark()
        for _ in range(MAX_ROUNDS):
            for kind in RESYNC_ORDER:
                self._resync(kind)
            keys = self._schedule.pop_due(self._clock())
            if not keys:
                return self._log.records(mark)
            self._process(keys)
        raise RuntimeError(f"still waking objects after {MAX_ROUNDS} rounds")

    # events -------------------------------------------------------------------------------

    def _resync(self, kind: str) -> str:
        """Feed a fresh list of ``kind`` to the handler; forget what is gone. The list's RV."""
        items, resource_version = self._api.list(kind)
        listed = set()
        for item in items:
            item.setdefault("kind", kind)
            listed.add(key_of(item))
            self._handle("MODIFIED", item)
        with self._seen_lock:
            gone = [key for key in self._seen if key.kind == kind and key not in listed]
        for key in gone:
            self._forget(key)
        return resource_version

    def _handle(self, event_type: str, obj: dict[str, Any]) -> None:
        """Apply the F1/F2 predicates to one watch event and wake what they select."""
        key = key_of(obj)
        if key.kind not in self._reconcilers:
            return
        if event_type == "DELETED":
            self._forget(key)
            return
        new = view_of(obj)
        with self._seen_lock:
            old = self._seen.get(key)
            self._seen[key] = new
            woken = [key] if wakes(old, new) else []
            if revision_changed(old, new) and new.artifact_revision is not None:
                woken += [
                    view.key
                    for view in self._seen.values()
                    if view.source == key and revision_wakes(view, new.artifact_revision)
                ]
        for target in woken:
            self._schedule.wake(target)

    def _forget(self, key: ObjectKey) -> None:
        with self._seen_lock:
            self._seen.pop(key, None)
        self._schedule.forget(key)

    # reconciling --------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            keys = self._schedule.wait_due(self._clock)
            if not keys:
                return
            try:
                self._process(keys)
            except Exception:  # the worker's outermost loop: log and keep serving
                logger.exception("Flux double failed reconciling %s", keys)

    def _process(self, keys: list[ObjectKey]) -> None:
        with self._busy:
            for key in keys:
                self._reconcile(key)

    def _reconcile(self, key: ObjectKey) -> None:
        try:
            outcome = self._reconcilers[key.kind](key)
        except Stopping:
            return
        except TRANSIENT as err:
            logger.warning("reconcile of %s failed: %s", key, err)
            self._log.add(
                Record(
                    key.kind,
                    key.namespace,
                    key.name,
                    FAILED,
                    "",
                    self._clock(),
                    message=f"{type(err).__name__}: {err}",
                )
            )
            outcome = Outcome(API_RETRY_S)
        if outcome.gone:
            self._forget(key)
            return
        after = outcome.requeue_after
        self._schedule.due_at(key, None if after is None else self._clock() + after)
