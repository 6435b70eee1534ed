"""The Argo CD double's refresh: compare, persist ``status.sync``, then autoSync.

Facts (../shared/facts/appliers.md):

- A4: a refresh is due when ``timeout.reconciliation`` has passed since ``reconciledAt``, when
  ``spec.source`` or ``spec.destination`` differ from ``comparedTo``, or when the annotation
  ``argocd.argoproj.io/refresh`` is present (and after an operation, A2). It resolves
  ``targetRevision`` afresh, writes ``status.sync {status, revision, comparedTo}`` and
  ``reconciledAt``, and removes the annotation after persisting status. A refresh never
  applies anything itself.
- A2: after the comparison autoSync may set an operation, but only when the sync windows let
  an automated sync run (``CanSync(false)``); it sets it as ``SetAppOperation`` does: a fresh
  read, nothing if an operation is already set, ``operation`` set and
  ``status.operationState`` cleared in one update of the whole Application at its
  ``resourceVersion``, a 409 read again.
- A failed comparison is ``status.sync.status: Unknown`` with a ``ComparisonError``
  condition.
"""

from __future__ import annotations

from typing import Any

from sandbox.argocd import policy
from sandbox.argocd.diff import overall
from sandbox.argocd.operation import parse_stamp
from sandbox.argocd.policy import UNKNOWN
from sandbox.argocd.render import RenderFailed
from sandbox.argocd.workspace import AUTO_SYNC, COMPARED, Workspace
from sandbox.flux.conditions import timestamp as stamp
from sandbox.flux.triggers import ObjectKey

REFRESH = "argocd.argoproj.io/refresh"
COMPARISON_ERROR = "ComparisonError"
SET_OPERATION_ATTEMPTS = 5  # SetAppOperation loops on 409; the double gives up after this


def refresh_due(app: dict[str, Any], now: float, reconciliation_s: float) -> bool:
    """A4 ``needRefreshAppStatus``: requested, never compared, expired, or spec moved."""
    annotations = app.get("metadata", {}).get("annotations") or {}
    status = app.get("status") or {}
    if REFRESH in annotations or not status.get("reconciledAt"):
        return True
    if parse_stamp(str(status["reconciledAt"])) + reconciliation_s <= now:
        return True
    compared = (status.get("sync") or {}).get("comparedTo") or {}
    spec = app.get("spec") or {}
    return bool(
        compared.get("source") != spec.get("source")
        or compared.get("destination") != spec.get("destination")
    )


def next_refresh(app: dict[str, Any], reconciliation_s: float) -> float | None:
    """When the comparison expires (None before the first one)."""
    reconciled = (app.get("status") or {}).get("reconciledAt")
    return parse_stamp(str(reconciled)) + reconciliation_s if reconciled else None


class Refresher:
    """Compares one Application with its folder and runs autoSync."""

    def __init__(self, work: Workspace) -> None:
        self._work = work

    def refresh(self, key: ObjectKey, app: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        """Compare, persist, drop the refresh request, autoSync; the app and a wake time."""
        work = self._work
        spec = app["spec"]
        source = spec.get("source") or {}
        compared_to = {"source": source, "destination": spec.get("destination") or {}}
        conditions = [
            c
            for c in (app.get("status") or {}).get("conditions") or []
            if c.get("type") not in (COMPARISON_ERROR, policy.SYNC_ERROR)
        ]
        status: dict[str, Any] = {"reconciledAt": stamp(work.clock())}
        try:
            sha = work.renderer.resolve(str(source.get("repoURL", "")), _target(source))
            resources = work.compare(app, work.desired(app, source, sha))
            status["sync"] = {
                "status": overall(resources),
                "revision": sha,
                "comparedTo": compared_to,
            }
            status["resources"] = resources
        except RenderFailed as err:
            sha = ""
            status["sync"] = {"status": UNKNOWN, "comparedTo": compared_to}
            conditions.append(self._condition(COMPARISON_ERROR, str(err)))
        status["conditions"] = conditions
        updated = work.api.patch(key, {"status": status})
        if updated is None:
            return app, None
        work.record(key, COMPARED, sha, status["sync"]["status"])
        if REFRESH in (updated["metadata"].get("annotations") or {}):
            updated = work.api.patch(key, {"metadata": {"annotations": {REFRESH: None}}}) or updated
        return self.autosync(key, updated)

    def autosync(self, key: ObjectKey, app: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
        """autoSync on the last comparison (also run when a wake finds no refresh due, as an
        update of the app queues a refresh at level ComparisonWithNothing)."""
        work = self._work
        if not policy.can_sync(work.windows, manual=False):
            return app, None
        verdict = policy.autosync(app, work.clock(), work.settings.self_heal_timeout_s)
        if verdict.sync_error:
            conditions = list((app.get("status") or {}).get("conditions") or [])
            conditions.append(self._condition(policy.SYNC_ERROR, verdict.sync_error))
            app = work.api.patch(key, {"status": {"conditions": conditions}}) or app
        if verdict.operation is not None and self._set_operation(key, verdict.operation):
            work.record(key, AUTO_SYNC, str(verdict.operation["sync"]["revision"]))
        return app, verdict.retry_at

    def _set_operation(self, key: ObjectKey, operation: dict[str, Any]) -> bool:
        """``SetAppOperation``: False when another operation is in progress or the app is gone."""
        for _ in range(SET_OPERATION_ATTEMPTS):
            app = self._work.api.get(key)
            if app is None or app.get("operation"):
                return False
            app["operation"] = operation
            (app.get("status") or {}).pop("operationState", None)
            if self._work.api.replace(key, app):
                return True
        return False

    def _condition(self, kind: str, message: str) -> dict[str, Any]:
        return {"type": kind, "message": message, "lastTransitionTime": stamp(self._work.clock())}


def _target(source: dict[str, Any]) -> str:
    return str(source.get("targetRevision") or "HEAD")
