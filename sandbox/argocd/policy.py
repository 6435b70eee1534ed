"""When the Argo CD double may sync: automated sync's guards, sync windows, history.

Facts (../shared/facts/appliers.md):

- A2 "Guards before creating the op": automated enabled; ``operation`` unset; not being
  deleted; ``status.sync.status == OutOfSync``; the "prune-only but prune disabled" skip; the
  allowEmpty guard; ``alreadyAttemptedSync``: a revision (and source) already attempted is not
  synced again: after a failed attempt the condition ``SyncError`` "Failed last sync attempt
  to ..." is set, after a successful one nothing happens unless ``selfHeal``, which syncs the
  resources that are not Synced again once the self-heal backoff (default 5s) has passed.
- A6: ``SyncWindows.CanSync(isManual)``: an active deny window blocks (a manual op passes when
  the window has ``manualSync``); allow windows of which none is active block likewise; no
  windows allow. ``syncOverrun`` is not modelled.
- ``status.history``: appended by ``persistRevisionHistory`` after a successful sync that is
  not restricted to some resources, trimmed to ``spec.revisionHistoryLimit`` (CRD: "Default
  is 10") keeping the newest; entries ``{id, revision, deployedAt, deployStartedAt, source,
  initiatedBy}`` with ``id`` counting up (the CRD's RevisionHistory).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from sandbox.argocd.operation import (
    SUCCEEDED,
    automated_enabled,
    automated_policy,
    autosync_operation,
    parse_stamp,
)

OUT_OF_SYNC, SYNCED, UNKNOWN = "OutOfSync", "Synced", "Unknown"
DEFAULT_HISTORY_LIMIT = 10  # spec.revisionHistoryLimit default (CRD description)
SYNC_ERROR = "SyncError"


@dataclass(frozen=True, slots=True)
class SyncWindow:
    """One sync window as ``CanSync`` reads it; ``active``: the schedule covers now."""

    kind: str  # "allow" or "deny"
    active: bool = True
    manual_sync: bool = False


def can_sync(windows: list[SyncWindow], manual: bool) -> bool:
    """A6 ``CanSync(isManual)`` without overrun."""
    deny = [w for w in windows if w.kind == "deny" and w.active]
    if deny:
        return manual and any(w.manual_sync for w in deny)
    allow = [w for w in windows if w.kind == "allow"]
    if allow and not any(w.active for w in allow):
        return manual and any(w.manual_sync for w in allow)
    return True


@dataclass(frozen=True, slots=True)
class AutoSync:
    """autoSync's verdict: an operation to set, a reason to skip, a SyncError, a time to retry."""

    operation: dict[str, Any] | None = None
    skipped: str = ""
    sync_error: str = ""
    retry_at: float | None = None


def autosync(app: dict[str, Any], now: float, self_heal_timeout: float) -> AutoSync:
    """A2 autoSync for an Application whose ``status.sync`` and ``resources`` are fresh."""
    status = app.get("status") or {}
    sync = status.get("sync") or {}
    if not automated_enabled(app) or app.get("operation"):
        return AutoSync(skipped="automated sync disabled or an operation in progress")
    if app.get("metadata", {}).get("deletionTimestamp"):
        return AutoSync(skipped="application is being deleted")
    if sync.get("status") != OUT_OF_SYNC:
        return AutoSync(skipped=f"application status is {sync.get('status')}")
    policy = automated_policy(app)
    resources = list(status.get("resources") or [])
    drifted = [r for r in resources if r.get("status") != SYNCED]
    if drifted and all(r.get("requiresPruning") for r in drifted) and not policy.get("prune"):
        return AutoSync(
            skipped="need to prune extra resources only but automated prune is disabled"
        )
    if not any(not r.get("requiresPruning") for r in resources) and not policy.get("allowEmpty"):
        return AutoSync(skipped="auto-sync will wipe out all resources")
    revision = str(sync.get("revision", ""))
    state = status.get("operationState") or {}
    attempted = (state.get("syncResult") or {}).get("revision") == revision and (
        (state.get("syncResult") or {}).get("source") == app["spec"].get("source")
    )
    if not attempted:
        return AutoSync(operation=autosync_operation(app, revision))
    if state.get("phase") != SUCCEEDED:
        message = f"Failed last sync attempt to {revision}: {state.get('message', '')}"
        return AutoSync(skipped=message, sync_error=message)
    if not policy.get("selfHeal"):
        return AutoSync(skipped=f"most recent sync already to {revision}")
    heal_at = parse_stamp(str(state["finishedAt"])) + self_heal_timeout
    if now < heal_at:
        return AutoSync(skipped="self-heal backoff", retry_at=heal_at)
    heal = [{k: str(r.get(k, "")) for k in ("group", "kind", "namespace", "name")} for r in drifted]
    return AutoSync(operation=autosync_operation(app, revision, heal))


def with_history(app: dict[str, Any], state: dict[str, Any]) -> list[dict[str, Any]]:
    """``status.history`` after ``state`` finished (unchanged unless it is recorded)."""
    status = app.get("status") or {}
    history = list(status.get("history") or [])
    sync = state["operation"].get("sync") or {}
    if state.get("phase") != SUCCEEDED or sync.get("resources") or sync.get("dryRun"):
        return history
    result = state.get("syncResult") or {}
    entry = {
        "id": max((int(h.get("id", 0)) for h in history), default=-1) + 1,
        "revision": result.get("revision", ""),
        "deployStartedAt": state["startedAt"],
        "deployedAt": state["finishedAt"],
        "source": copy.deepcopy(result.get("source") or app["spec"].get("source")),
        "initiatedBy": copy.deepcopy(state["operation"].get("initiatedBy") or {}),
    }
    limit = app["spec"].get("revisionHistoryLimit")
    keep = DEFAULT_HISTORY_LIMIT if limit is None else int(limit)
    return [*history, entry][-keep:] if keep > 0 else []
