"""What the refresh and the sync of the Argo CD double share: settings, tools, the compare.

``Settings`` holds the timings (each pinned to the fact it follows, or 0 where it only paces
tests); ``Workspace`` holds the API door, the destination cluster, the renderer, the clock, the
activity log, the sync windows and the pacing, and renders and compares an Application's
folder (../shared/facts/appliers.md A4, A5; ``diff`` has the rules).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sandbox.argocd import diff
from sandbox.argocd.cluster import Cluster, Pacing
from sandbox.argocd.kubeapi import APPLICATION, ArgoApi
from sandbox.argocd.policy import OUT_OF_SYNC, SYNCED, SyncWindow
from sandbox.argocd.render import Renderer
from sandbox.flux.activity import ActivityLog, Record
from sandbox.flux.triggers import ObjectKey

# Actions in the activity log.
COMPARED = "compared"  # a comparison: revision = the resolved commit, message = sync status
AUTO_SYNC = "auto-sync"  # autoSync set an operation: revision = the commit it pins
STARTED = "started"  # an operation began Running (message: the attempt's message)
BLOCKED = "blocked"  # a sync window holds the operation Running
RETRY_WAIT = "retry-wait"  # a failed attempt awaits its retry (Running with finishedAt)
FINISHED = "finished"  # the operation completed: message = phase, revision = syncResult's


@dataclass(frozen=True, slots=True)
class Settings:
    """Timings of the Argo CD double, in seconds."""

    # timeout.reconciliation: 120 s by default (A4); the real one adds up to 60 s of jitter.
    reconciliation_s: float = 120.0
    # --self-heal-timeout-seconds: 5 s by default (A2).
    self_heal_timeout_s: float = 5.0
    # A running operation is requeued at most every 30 s (appOperationMaxRequeueInterval, A2):
    # how often an operation held by a sync window looks again.
    operation_requeue_s: float = 30.0


@dataclass
class Workspace:
    """Everything a refresh or a sync of one Application uses."""

    api: ArgoApi
    cluster: Cluster
    renderer: Renderer
    clock: Callable[[], float]
    log: ActivityLog
    settings: Settings
    pacing: Pacing
    stop: threading.Event
    windows: list[SyncWindow] = field(default_factory=list)

    def desired(
        self, app: dict[str, Any], source: dict[str, Any], sha: str
    ) -> list[dict[str, Any]]:
        """The folder of ``source`` at ``sha``, placed in the destination and tracked."""
        objects = self.renderer.objects(
            str(source.get("repoURL", "")), sha, str(source.get("path") or ".")
        )
        namespace = str((app["spec"].get("destination") or {}).get("namespace") or "")
        for obj in objects:
            self.cluster.place(obj, namespace)
        return diff.tracked(app["metadata"]["name"], objects)

    def compare(self, app: dict[str, Any], desired: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``status.resources``: each desired object's status, then tracked leftovers to prune."""
        entries = []
        wanted = set()
        for obj in desired:
            meta = obj["metadata"]
            live = self.cluster.live(
                obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", "")
            )
            entry = diff.resource_status(obj, SYNCED if diff.synced(obj, live) else OUT_OF_SYNC)
            wanted.add(_identity(entry))
            entries.append(entry)
        for old in (app.get("status") or {}).get("resources") or []:
            if _identity(old) in wanted:
                continue
            live = self.cluster.live(
                diff.api_version(old), old["kind"], old["name"], old.get("namespace", "")
            )
            if diff.owned_by(app["metadata"]["name"], live):
                entries.append(diff.resource_status(old_object(old), OUT_OF_SYNC, True))
                wanted.add(_identity(old))
        return entries

    def record(self, key: ObjectKey, action: str, revision: str, message: str = "") -> None:
        """Add an activity record for the Application ``key``."""
        self.log.add(
            Record(
                APPLICATION, key.namespace, key.name, action, revision, self.clock(), (), message
            )
        )


def old_object(entry: dict[str, Any]) -> dict[str, Any]:
    """A minimal object for a ``status.resources[]`` entry."""
    meta = {"name": entry["name"], "namespace": entry.get("namespace", "")}
    return {"apiVersion": diff.api_version(entry), "kind": entry["kind"], "metadata": meta}


def _identity(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(entry.get("group", "")),
        str(entry["kind"]),
        str(entry.get("namespace", "")),
        str(entry["name"]),
    )
