"""The kustomize-controller double: reconcile one ``kustomize.toolkit.fluxcd.io/v1`` Kustomization.

The steps and status writes follow kustomize-controller ``internal/controller/
kustomization_controller.go`` (``Reconcile``, ``reconcile``, ``finalizeStatus``) as
../shared/facts/appliers.md F1 and F3 describe them:

1. suspended: nothing is applied and no interval requeue is set, but the deferred
   ``finalizeStatus`` still copies the requestedAt token into ``lastHandledReconcileAt`` (F1);
2. the source's CURRENT artifact is used (no pin of its own); no source or no artifact yet is
   ``Ready=False/ArtifactFailed``;
3. progress is written first (``Ready=Unknown``, ``Reconciling`` "Fetching manifests for
   revision R with a timeout of T"), then, once the artifact is unpacked and ``spec.path``
   exists, ``lastAttemptedRevision`` with "Building manifests ...", then "Detecting drift ...";
   each is its own status patch, so a watcher sees the attempt before the apply;
4. build (``manifests``, or ``kustomize_build`` when ``spec.path`` holds a kustomization),
   apply and prune (``ssa``), new inventory, then
   ``lastAppliedRevision`` and ``Ready=True/ReconciliationSucceeded`` "Applied revision: R";
   failures are ``Ready=False`` with ``ArtifactFailed``/``BuildFailed``/
   ``ReconciliationFailed``/``PruneFailed`` and retry after ``spec.retryInterval``;
5. ``finalizeStatus``: the token into ``lastHandledReconcileAt``; when Ready, drop
   ``Reconciling`` and set ``observedGeneration``; when failed, ``Reconciling`` becomes
   ``ProgressingWithRetry``.

Pacing (``sandbox.flux.pacing``): once its artifact is found, a reconcile waits at the gate and
pauses ``before_apply_s`` before it writes its progress and applies (the seconds a real apply
takes after its stamp), and pauses ``between_objects_s`` between two objects.

Differences: no finalizer (deleting a Kustomization prunes nothing), no jitter, no health
checks, ``dependsOn``, post-build substitution, ``spec.patches``/``spec.images`` or
history; kustomize beyond the subset the product writes fails the build. Decryption
(``spec.decryption``: SOPS with age identities) is ``sandbox.flux.sops``; an encrypted object
in a Kustomization without ``spec.decryption`` is applied as built (not modelled further).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandbox.flux import conditions as cond
from sandbox.flux import durations, inventory, kustomize_build, manifests, sops
from sandbox.flux.activity import APPLIED, FAILED, SUSPENDED, ActivityLog, Record
from sandbox.flux.kubeapi import FluxApi
from sandbox.flux.pacing import Pacing
from sandbox.flux.schedule import Outcome
from sandbox.flux.ssa import CONFIGURED, CREATED, DELETED, Applier, ApplyFailed, Change
from sandbox.flux.storage import ArtifactMissing, Storage
from sandbox.flux.triggers import ObjectKey, source_of, token_of

# --requeue-dependency default: "Source artifact not found, retrying in 30s".
DEPENDENCY_REQUEUE_S = 30.0
CHANGED = (CREATED, CONFIGURED, DELETED)  # what a record lists (Flux logs only changes)
MIN_TIMEOUT_S = 30.0  # GetTimeout(): interval - 30s, at least 30s, when spec.timeout is unset


class Failure(Exception):
    """A reconcile step failed with a Ready=False ``reason``; ``requeue`` overrides the retry."""

    def __init__(self, reason: str, message: str, requeue: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.requeue = requeue


class KustomizeReconciler:
    """Reconciles Kustomizations from their GitRepository's artifact."""

    def __init__(
        self,
        api: FluxApi,
        storage: Storage,
        clock: Callable[[], float],
        log: ActivityLog,
        *,
        pacing: Pacing | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self._api = api
        self._storage = storage
        self._clock = clock
        self._log = log
        self._pacing = pacing or Pacing()
        self._stop = stop or threading.Event()

    def reconcile(self, key: ObjectKey) -> Outcome:
        """One reconcile of ``key``; the outcome says when it is due again."""
        obj = self._api.get(key)
        if obj is None:
            return Outcome(None, gone=True)
        spec = obj["spec"]
        if spec.get("suspend"):
            self._finalize(key, obj)
            self._record(key, SUSPENDED, "")
            return Outcome(None)
        interval = durations.parse(spec["interval"])
        retry = durations.parse(spec["retryInterval"]) if spec.get("retryInterval") else interval
        try:
            revision, changes = self._run(key, obj)
        except Failure as failure:
            self._set(obj, cond.READY, cond.FALSE, failure.reason, str(failure))
            self._finalize(key, obj)
            self._record(
                key, FAILED, obj["status"].get("lastAttemptedRevision", ""), message=str(failure)
            )
            return Outcome(retry if failure.requeue is None else failure.requeue)
        self._finalize(key, obj)
        self._record(key, APPLIED, revision, changes=changes)
        return Outcome(interval)

    def _run(self, key: ObjectKey, obj: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        artifact = self._artifact(obj)
        self._pacing.hold(self._stop)  # Stopping: abandoned, as a killed controller's would be
        revision = str(artifact["revision"])
        timeout = durations.format_go(_timeout(obj["spec"]))
        self._set(obj, cond.READY, cond.UNKNOWN, "Progressing", "Reconciliation in progress")
        self._progress(
            key, obj, f"Fetching manifests for revision {revision} with a timeout of {timeout}"
        )
        with tempfile.TemporaryDirectory(prefix="kustomization-") as scratch:
            root = self._unpack(obj, artifact, Path(scratch))
            obj["status"]["lastAttemptedRevision"] = revision
            self._progress(
                key, obj, f"Building manifests for revision {revision} with a timeout of {timeout}"
            )
            objects = self._build(key, obj, root, Path(scratch))
        self._progress(
            key, obj, f"Detecting drift for revision {revision} with a timeout of {timeout}"
        )
        changes = self._apply(key, obj, objects)
        obj["status"]["lastAppliedRevision"] = revision
        self._set(
            obj, cond.READY, cond.TRUE, "ReconciliationSucceeded", f"Applied revision: {revision}"
        )
        return revision, tuple(str(c) for c in changes if c.action in CHANGED)

    def _artifact(self, obj: dict[str, Any]) -> dict[str, Any]:
        source = source_of(obj)
        described = f"{source.kind}/{source.namespace}/{source.name}"
        if source.kind != "GitRepository":
            raise Failure(
                "ArtifactFailed",
                f"source `{source.name}` kind '{source.kind}' not supported by the sandbox double",
            )
        found = self._api.get(source)
        if found is None:
            raise Failure("ArtifactFailed", f"Source '{described}' not found")
        artifact = (found.get("status") or {}).get("artifact")
        if not artifact:
            raise Failure(
                "ArtifactFailed",
                "Source artifact not found, retrying in "
                f"{durations.format_go(DEPENDENCY_REQUEUE_S)}",
                requeue=DEPENDENCY_REQUEUE_S,
            )
        return dict(artifact)

    def _unpack(self, obj: dict[str, Any], artifact: dict[str, Any], scratch: Path) -> Path:
        try:
            self._storage.extract(artifact, scratch)
        except ArtifactMissing as err:
            raise Failure("ArtifactFailed", str(err)) from err
        path = str(obj["spec"].get("path") or "./")
        root = (scratch / path.lstrip("/")).resolve()
        if root != scratch.resolve() and scratch.resolve() not in root.parents:
            raise Failure("ArtifactFailed", f"path '{path}' leaves the artifact")
        if not root.is_dir():
            raise Failure(
                "ArtifactFailed",
                f"kustomization path not found: stat {root}: no such file or directory",
            )
        return root

    def _build(
        self, key: ObjectKey, obj: dict[str, Any], root: Path, artifact: Path
    ) -> list[dict[str, Any]]:
        try:
            if kustomize_build.kustomization_file(root) is not None:
                objects = kustomize_build.build(root, artifact)  # the subset (P2)
            else:
                objects = manifests.read_objects(root)
        except manifests.BuildFailed as err:
            raise Failure("BuildFailed", str(err)) from err
        objects = self._decrypt(key, obj, objects)  # before the owner labels: the MAC is over Git
        manifests.set_owner(objects, key.name, key.namespace)
        return objects

    def _decrypt(
        self, key: ObjectKey, obj: dict[str, Any], objects: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Decrypt SOPS objects with the age identities of ``spec.decryption.secretRef``; a
        missing Secret, a wrong key or a bad MAC fails the build (nothing is applied)."""
        decryption = obj["spec"].get("decryption") or {}
        name = (decryption.get("secretRef") or {}).get("name")
        if decryption.get("provider") != "sops" or not any(map(sops.is_encrypted, objects)):
            return objects
        data = self._api.secret_data(key.namespace, name) if name else {}
        if data is None:
            raise Failure("BuildFailed", f"cannot get decryption Secret '{key.namespace}/{name}'")
        try:
            return sops.decrypt_all(objects, sops.identities_of(data))
        except sops.DecryptionFailed as err:
            raise Failure("BuildFailed", str(err)) from err

    def _apply(
        self, key: ObjectKey, obj: dict[str, Any], objects: list[dict[str, Any]]
    ) -> list[Change]:
        applier = Applier(self._api.dynamic(), str(obj["spec"].get("targetNamespace") or ""))
        try:
            changes = applier.apply_all(objects, lambda: self._pacing.between(self._stop))
        except ApplyFailed as err:
            raise Failure("ReconciliationFailed", str(err)) from err
        old = inventory.entries_of(obj["status"])
        new = [inventory.entry_of(o) for o in objects]
        obj["status"]["inventory"] = inventory.to_status(new)
        if not obj["spec"].get("prune"):
            return changes
        try:
            pruned = applier.prune(inventory.stale(old, new), (key.name, key.namespace))
        except ApplyFailed as err:
            raise Failure("PruneFailed", str(err)) from err
        return changes + pruned

    def _progress(self, key: ObjectKey, obj: dict[str, Any], message: str) -> None:
        self._set(obj, cond.RECONCILING, cond.TRUE, "Progressing", message)
        self._api.patch_status(key, obj["status"])

    def _finalize(self, key: ObjectKey, obj: dict[str, Any]) -> None:
        """``finalizeStatus``: token, observedGeneration or ProgressingWithRetry, then patch."""
        status = obj.setdefault("status", {})
        token = token_of(obj)
        if token is not None:
            status["lastHandledReconcileAt"] = token
        conds = list(status.get("conditions") or [])
        if cond.is_true(conds, cond.READY):
            status["conditions"] = cond.delete(conds, cond.RECONCILING)
            status["observedGeneration"] = obj["metadata"].get("generation", 0)
        elif cond.has_status(conds, cond.READY, cond.FALSE):
            status["conditions"] = cond.with_reason(conds, cond.RECONCILING, "ProgressingWithRetry")
        if status:
            self._api.patch_status(key, status)

    def _set(self, obj: dict[str, Any], kind: str, status: str, reason: str, message: str) -> None:
        current = obj.setdefault("status", {})
        current["conditions"] = cond.mark(
            list(current.get("conditions") or []),
            kind,
            status,
            reason,
            message,
            generation=int(obj["metadata"].get("generation", 0)),
            now=self._clock(),
        )

    def _record(
        self,
        key: ObjectKey,
        action: str,
        revision: str,
        *,
        changes: tuple[str, ...] = (),
        message: str = "",
    ) -> None:
        self._log.add(
            Record(
                key.kind, key.namespace, key.name, action, revision, self._clock(), changes, message
            )
        )


def _timeout(spec: dict[str, Any]) -> float:
    """``GetTimeout()``: ``spec.timeout``, else the interval minus 30 s, at least 30 s."""
    if spec.get("timeout"):
        return durations.parse(spec["timeout"])
    return max(durations.parse(spec["interval"]) - MIN_TIMEOUT_S, MIN_TIMEOUT_S)
