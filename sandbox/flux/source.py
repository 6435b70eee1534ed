"""The source-controller double: reconcile one GitRepository (``source.toolkit.fluxcd.io/v1``).

A reconcile reads the ref's head with ``git ls-remote``; when it is the commit of the stored
artifact nothing is fetched (source-controller's "no changes since last reconciliation"
short cut), otherwise it writes a progress status (ArtifactOutdated/NewRevision while an
artifact exists, Reconciling/Progressing), fetches the commit into the cache, archives it and
publishes the new ``status.artifact``. Facts: ../shared/facts/appliers.md F1 (the token is
copied into ``lastHandledReconcileAt`` at the end of every reconcile, also a suspended one:
source-controller ``internal/controller/gitrepository_controller.go`` ``Reconcile`` runs the
``summarize.RecordReconcileReq`` processor in its deferred patch, before the suspend check
returns) and F2 (revision format, conditions and their messages, interval requeue).

Differences from the real controller: no finalizer, no jitter on the interval, failures retry
after 1 s doubling up to the interval, no Events, no garbage collection of old artifacts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sandbox.flux import conditions as cond
from sandbox.flux import durations
from sandbox.flux.activity import FAILED, FETCHED, SUSPENDED, UP_TO_DATE, ActivityLog, Record
from sandbox.flux.gitsource import GitCache, GitFailure, GitRef
from sandbox.flux.kubeapi import FluxApi
from sandbox.flux.schedule import Outcome
from sandbox.flux.storage import Storage
from sandbox.flux.triggers import ObjectKey, token_of

ARTIFACT_IN_STORAGE = "ArtifactInStorage"
ARTIFACT_OUTDATED = "ArtifactOutdated"
FETCH_FAILED = "FetchFailed"
SUCCEEDED = "Succeeded"
GIT_OPERATION_FAILED = "GitOperationFailed"
DEFAULT_TIMEOUT = "60s"  # CRD default of spec.timeout
FIRST_RETRY_S = 1.0  # first retry after a failure; doubles up to spec.interval


@dataclass(frozen=True, slots=True)
class _Fetch:
    """The artifact a reconcile ends with, and whether it is new."""

    action: str
    artifact: dict[str, Any]


class SourceReconciler:
    """Reconciles GitRepositories against real Git remotes."""

    def __init__(
        self,
        api: FluxApi,
        git: GitCache,
        storage: Storage,
        clock: Callable[[], float],
        log: ActivityLog,
    ) -> None:
        self._api = api
        self._git = git
        self._storage = storage
        self._clock = clock
        self._log = log
        self._failures: dict[ObjectKey, int] = {}

    def reconcile(self, key: ObjectKey) -> Outcome:
        """One reconcile of ``key``; the outcome says when it is due again."""
        obj = self._api.get(key)
        if obj is None:
            self._failures.pop(key, None)
            return Outcome(None, gone=True)
        revision = ((obj.get("status") or {}).get("artifact") or {}).get("revision", "")
        if obj["spec"].get("suspend"):
            self._patch(key, obj, {})
            self._record(key, SUSPENDED, revision)
            return Outcome(None)
        interval = durations.parse(obj["spec"]["interval"])
        try:
            fetched = self._sync(key, obj)
        except GitFailure as err:
            return self._failed(key, obj, str(err), interval)
        self._failures.pop(key, None)
        self._succeeded(key, obj, fetched)
        return Outcome(interval)

    def _sync(self, key: ObjectKey, obj: dict[str, Any]) -> _Fetch:
        spec = obj["spec"]
        timeout = durations.parse(spec.get("timeout") or DEFAULT_TIMEOUT)
        ref = GitRef.from_spec(spec)
        resolved = self._git.resolve(spec["url"], ref, timeout)
        current = (obj.get("status") or {}).get("artifact")
        if (
            current
            and current.get("revision") == resolved.revision
            and self._storage.holds(current)
        ):
            return _Fetch(UP_TO_DATE, current)
        self._progress(key, obj, resolved.revision)
        cache = f"{key.namespace}/{key.name}"
        repo = self._git.fetch(cache, spec["url"], ref, resolved.sha, timeout)
        path = self._storage.path_for(key.namespace, key.name, resolved.sha)
        self._git.archive(repo, resolved.sha, self._storage.local(path), timeout)
        return _Fetch(FETCHED, self._storage.describe(path, resolved.revision, self._clock()))

    def _progress(self, key: ObjectKey, obj: dict[str, Any], revision: str) -> None:
        """F2: ArtifactOutdated/NewRevision (if an artifact exists) while fetching ``revision``."""
        message = f"new upstream revision '{revision}'"
        conds = self._conditions(obj)
        if (obj.get("status") or {}).get("artifact"):
            conds = self._mark(obj, conds, ARTIFACT_OUTDATED, (cond.TRUE, "NewRevision", message))
        building = f"building artifact: {message}"
        conds = self._mark(obj, conds, cond.RECONCILING, (cond.TRUE, "Progressing", building))
        conds = self._mark(obj, conds, cond.READY, (cond.UNKNOWN, "Progressing", building))
        obj.setdefault("status", {})["conditions"] = conds
        self._api.patch_status(key, {"conditions": conds})

    def _succeeded(self, key: ObjectKey, obj: dict[str, Any], fetched: _Fetch) -> None:
        revision = fetched.artifact["revision"]
        message = f"stored artifact for revision '{revision}'"
        conds = self._conditions(obj)
        for stale in (FETCH_FAILED, ARTIFACT_OUTDATED, cond.RECONCILING):
            conds = cond.delete(conds, stale)
        conds = self._mark(obj, conds, cond.READY, (cond.TRUE, SUCCEEDED, message))
        conds = self._mark(obj, conds, ARTIFACT_IN_STORAGE, (cond.TRUE, SUCCEEDED, message))
        self._patch(
            key,
            obj,
            {
                "artifact": fetched.artifact,
                "conditions": conds,
                "observedGeneration": obj["metadata"].get("generation", 0),
            },
        )
        self._record(key, fetched.action, revision)

    def _failed(self, key: ObjectKey, obj: dict[str, Any], error: str, interval: float) -> Outcome:
        message = f"failed to checkout and determine revision: {error}"
        conds = cond.delete(self._conditions(obj), cond.RECONCILING)
        conds = self._mark(obj, conds, FETCH_FAILED, (cond.TRUE, GIT_OPERATION_FAILED, message))
        conds = self._mark(obj, conds, cond.READY, (cond.FALSE, GIT_OPERATION_FAILED, message))
        self._patch(key, obj, {"conditions": conds})
        revision = ((obj.get("status") or {}).get("artifact") or {}).get("revision", "")
        self._record(key, FAILED, revision, message)
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return Outcome(min(interval, FIRST_RETRY_S * 2**failures))

    def _patch(self, key: ObjectKey, obj: dict[str, Any], status: dict[str, Any]) -> None:
        """Write ``status`` plus the handled token (F1: at the end of every reconcile)."""
        token = token_of(obj)
        if token is not None:
            status = {**status, "lastHandledReconcileAt": token}
        if status:
            self._api.patch_status(key, status)

    def _conditions(self, obj: dict[str, Any]) -> list[cond.Condition]:
        return list((obj.get("status") or {}).get("conditions") or [])

    def _mark(
        self,
        obj: dict[str, Any],
        conds: list[cond.Condition],
        kind: str,
        state: tuple[str, str, str],
    ) -> list[cond.Condition]:
        """``conds`` with ``kind`` set to ``state`` = (status, reason, message)."""
        status, reason, message = state
        return cond.mark(
            conds,
            kind,
            status,
            reason,
            message,
            generation=int(obj["metadata"].get("generation", 0)),
            now=self._clock(),
        )

    def _record(self, key: ObjectKey, action: str, revision: str, message: str = "") -> None:
        self._log.add(
            Record(
                key.kind, key.namespace, key.name, action, revision, self._clock(), message=message
            )
        )
