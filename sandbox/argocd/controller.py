"""``ArgoCDController``: the application-controller double, wired up.

Driven like the Flux doubles (``sandbox.flux.controllers``), over the same work queue
(``Schedule``) and list+watch loop (``KindWatcher``):

- ``start()``: background threads. A list+watch of Applications feeds every event through the
  informer's rules (a new Application, a spec change, the refresh annotation, or an
  ``operation`` that is set wakes it, A2/A4; other edits wake nothing); one worker processes
  whatever is due, one Application at a time: a refresh when one is due (``refresh``), then the
  operation if one is set (``sync``), then a refresh after a finished operation. An
  Application is due again when its comparison expires (``timeout.reconciliation``), its
  failed sync may retry, its held operation looks again, or self-heal's backoff ends.
- ``reconcile_due()``: one deterministic step for tests with an injected clock: list, process
  everything due at ``clock()``, repeat while that woke more, return the records.

Everything the double did is in ``log`` (``sandbox.flux.activity.ActivityLog``, kind
``Application``; actions in ``workspace``), which tests await. ``pacing`` slows syncs down or
holds them; ``set_windows`` sets the sync windows every operation obeys (A6).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from sandbox.argocd.cluster import Cluster, Pacing
from sandbox.argocd.kubeapi import APPLICATION, ArgoApi
from sandbox.argocd.policy import SyncWindow
from sandbox.argocd.refresh import REFRESH, Refresher, next_refresh, refresh_due
from sandbox.argocd.render import Renderer
from sandbox.argocd.sync import Syncer
from sandbox.argocd.workspace import Settings, Workspace
from sandbox.flux.activity import FAILED, ActivityLog, Record
from sandbox.flux.controllers import API_RETRY_S, MAX_ROUNDS, STOP_TIMEOUT_S, TRANSIENT
from sandbox.flux.pacing import Stopping, argocd_default
from sandbox.flux.schedule import Schedule
from sandbox.flux.triggers import ObjectKey, key_of
from sandbox.flux.watching import KindWatcher

logger = logging.getLogger(__name__)

View = tuple[str, Any, bool, bool]  # (resourceVersion, spec, operation set, refresh requested)


def view_of(app: dict[str, Any]) -> View:
    """What the wake rules read from an Application."""
    meta = app.get("metadata", {})
    annotations = meta.get("annotations") or {}
    version = str(meta.get("resourceVersion", ""))
    return (version, app.get("spec"), bool(app.get("operation")), REFRESH in annotations)


def wakes(old: View | None, new: View) -> bool:
    """A2/A4: a new app, or a change of it that alters the spec, or leaves an operation set or
    a refresh requested (a relist that shows nothing new wakes nothing)."""
    if old is None:
        return True
    return new[0] != old[0] and (new[2] or new[3] or new[1] != old[1])


class ArgoCDController:
    """An Argo CD application-controller double against one API server."""

    def __init__(
        self,
        api_client: client.ApiClient,
        workdir: Path,
        *,
        clock: Callable[[], float] = time.time,
        namespace: str | None = None,
        settings: Settings | None = None,
        pacing: Pacing | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._api = ArgoApi(api_client, workdir, namespace)
        self._stop = threading.Event()
        self._work = Workspace(
            self._api,
            Cluster(self._api.dynamic()),
            Renderer(workdir / "git"),
            clock,
            ActivityLog(),
            settings or Settings(),
            pacing or argocd_default(),
            self._stop,
        )
        self._refresher = Refresher(self._work)
        self._syncer = Syncer(self._work)
        self._schedule = Schedule()
        self._seen: dict[ObjectKey, View] = {}
        self._seen_lock = threading.Lock()
        self._busy = threading.Lock()
        self._watcher: KindWatcher | None = None
        self._worker: threading.Thread | None = None

    @property
    def log(self) -> ActivityLog:
        """Every comparison, auto-sync, operation start, hold, retry wait and finish, in order."""
        return self._work.log

    @property
    def pacing(self) -> Pacing:
        """How slowly syncs go; close ``pacing.gate`` to hold every sync before it applies."""
        return self._work.pacing

    def set_windows(self, windows: list[SyncWindow]) -> None:
        """Set the sync windows (A6) and look at every Application again."""
        self._work.windows = list(windows)
        with self._seen_lock:
            known = list(self._seen)
        for key in known:
            self._schedule.wake(key)

    # lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Watch Applications and process them in the background until ``stop()``."""
        if self._worker is not None:
            raise RuntimeError("the Argo CD double is already running")
        self._watcher = KindWatcher(APPLICATION, self._api, self._resync, self._handle)
        self._watcher.start()
        self._worker = threading.Thread(target=self._run, name="argocd-worker", daemon=True)
        self._worker.start()

    def stopping(self) -> None:
        """Announce ``stop()``: closed watches are expected from now on. Nothing new is
        processed, a held sync gives up, and the Application in hand is finished before this
        returns, while the API server and the Git host still answer."""
        if self._watcher is not None:
            self._watcher.stopping()
        self._stop.set()
        self._schedule.close()
        if self._worker is not None:
            self._worker.join(STOP_TIMEOUT_S)

    def stop(self) -> None:
        """Stop watching; a sync held by the gate or a pause gives up, leaving it Running."""
        self._stop.set()
        self._schedule.close()
        if self._watcher is not None:
            self._watcher.stop()
        if self._worker is not None:
            self._worker.join(STOP_TIMEOUT_S)

    def reconcile_due(self) -> list[Record]:
        """List, process everything due at ``clock()`` (repeating while that wakes more)."""
        mark = self.log.mark()
        for _ in range(MAX_ROUNDS):
            self._resync(APPLICATION)
            keys = self._schedule.pop_due(self._clock())
            if not keys:
                return self.log.records(mark)
            self._process(keys)
        raise RuntimeError(f"still waking Applications after {MAX_ROUNDS} rounds")

    # events -------------------------------------------------------------------------------

    def _resync(self, kind: str) -> str:
        items, resource_version = self._api.list(kind)
        listed = set()
        for item in items:
            item.setdefault("kind", APPLICATION)
            listed.add(key_of(item))
            self._handle("MODIFIED", item)
        with self._seen_lock:
            gone = [key for key in self._seen if key not in listed]
        for key in gone:
            self._forget(key)
        return resource_version

    def _handle(self, event_type: str, obj: dict[str, Any]) -> None:
        obj.setdefault("kind", APPLICATION)
        key = key_of(obj)
        if event_type == "DELETED":
            self._forget(key)
            return
        new = view_of(obj)
        with self._seen_lock:
            old = self._seen.get(key)
            self._seen[key] = new
        if wakes(old, new):
            self._schedule.wake(key)

    def _forget(self, key: ObjectKey) -> None:
        with self._seen_lock:
            self._seen.pop(key, None)
        self._schedule.forget(key)

    # processing ---------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            keys = self._schedule.wait_due(self._clock)
            if not keys:
                return
            try:
                self._process(keys)
            except Exception:  # the worker's outermost loop: log and keep serving
                logger.exception("Argo CD double failed processing %s", keys)

    def _process(self, keys: list[ObjectKey]) -> None:
        with self._busy:
            for key in keys:
                if self._stop.is_set():  # stopping: what is left waits for no server
                    return
                try:
                    when = self._reconcile(key)
                except Stopping:
                    return
                except TRANSIENT as err:
                    logger.warning("processing %s failed: %s", key, err)
                    self.log.add(
                        Record(
                            APPLICATION,
                            key.namespace,
                            key.name,
                            FAILED,
                            "",
                            self._clock(),
                            message=f"{type(err).__name__}: {err}",
                        )
                    )
                    when = self._clock() + API_RETRY_S
                if when is not False:
                    self._schedule.due_at(key, when)

    def _reconcile(self, key: ObjectKey) -> float | bool | None:
        """One pass over ``key``; when it is due next (False: it is gone)."""
        settings = self._work.settings
        app = self._api.get(key)
        if app is None:
            self._forget(key)
            return False
        wake: list[float | None] = []
        if refresh_due(app, self._clock(), settings.reconciliation_s):
            _, retry_at = self._refresher.refresh(key, app)
            wake.append(retry_at)
            app = self._api.get(key) or app
        elif not app.get("operation"):
            _, retry_at = self._refresher.autosync(key, app)
            wake.append(retry_at)
            app = self._api.get(key) or app
        if app.get("operation"):
            step = self._syncer.process(key, app)
            wake.append(step.wake_at)
            app = self._api.get(key) or app
            if step.finished:
                _, retry_at = self._refresher.refresh(key, app)
                wake.append(retry_at)
                app = self._api.get(key) or app
        wake.append(next_refresh(app, settings.reconciliation_s))
        times = [when for when in wake if when is not None]
        return min(times) if times else None
