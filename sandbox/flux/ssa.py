"""The kustomize-controller double's apply engine: server-side apply with drift detection.

For each object (Namespaces first, as ``ApplyAllStaged`` does): read the live object, skip it
on an opt-out, clean up its metadata (``drift.cleanup_patch``), server-side dry-run the apply,
and only when that differs from the live object apply it for real, with field manager
``kustomize-controller`` and ``force`` (fluxcd/pkg ``ssa/manager_apply.go``; facts
../shared/facts/appliers.md F3). Pruning deletes stale inventory entries that still carry this
Kustomization's owner labels and do not opt out with ``kustomize.toolkit.fluxcd.io/prune:
disabled``. Everything goes through the official ``DynamicClient``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import dynamic
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError

from sandbox.flux import drift
from sandbox.flux.inventory import Entry
from sandbox.flux.manifests import OWNER_NAME, OWNER_NAMESPACE, set_namespace

CREATED, CONFIGURED, UNCHANGED, SKIPPED, DELETED = (
    "created",
    "configured",
    "unchanged",
    "skipped",
    "deleted",
)
STAGE_ONE = ("Namespace", "CustomResourceDefinition")


class ApplyFailed(Exception):
    """An object could not be applied (or pruned); the message names it."""


@dataclass(frozen=True, slots=True)
class Change:
    """What happened to one object, e.g. ``ConfigMap/default/app configured``."""

    subject: str
    action: str

    def __str__(self) -> str:
        return f"{self.subject} {self.action}"


def subject_of(obj: dict[str, Any]) -> str:
    """``Kind/namespace/name`` (``Kind/name`` when cluster-scoped), as Flux logs objects."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return "/".join(p for p in (obj["kind"], namespace, meta["name"]) if p)


class Applier:
    """Applies and prunes objects for one Kustomization."""

    def __init__(self, client: dynamic.DynamicClient, target_namespace: str = "") -> None:
        self._client = client
        self._target = target_namespace

    def apply_all(
        self, objects: list[dict[str, Any]], between: Callable[[], None] = lambda: None
    ) -> list[Change]:
        """Apply every object that drifted, one by one, stage one first; one Change per object.
        ``between`` runs between two objects (the pacing's gap)."""
        ordered = sorted(objects, key=lambda obj: obj["kind"] not in STAGE_ONE)
        changes = []
        for index, obj in enumerate(ordered):
            if index:
                between()
            changes.append(self._apply(obj))
        return changes

    def _apply(self, obj: dict[str, Any]) -> Change:
        resource = self._resource(obj["apiVersion"], obj["kind"])
        set_namespace(obj, bool(resource.namespaced), self._target)
        meta = obj["metadata"]
        if resource.namespaced and not meta.get("namespace"):
            raise ApplyFailed(f"{subject_of(obj)} namespace not specified")
        live = self._get(resource, meta["name"], meta.get("namespace"))
        if drift.skipped(obj, live):
            return Change(subject_of(obj), SKIPPED)
        if live is not None:
            live = self._clean(resource, live)
        dry_run = self._server_side_apply(resource, obj, dry_run=True)
        if not drift.has_drifted(live, dry_run):
            return Change(subject_of(obj), UNCHANGED)
        self._server_side_apply(resource, obj, dry_run=False)
        return Change(subject_of(obj), CREATED if live is None else CONFIGURED)

    def prune(self, stale: list[Entry], owner: tuple[str, str]) -> list[Change]:
        """Delete the stale objects this Kustomization (name, namespace) still owns."""
        changes = []
        for entry in stale:
            resource = self._resource(entry.api_version, entry.kind)
            live = self._get(resource, entry.name, entry.namespace or None)
            if live is None or not _owned_by(live, owner):
                continue
            if drift.marked(live, drift.PRUNE_KEY, "disabled"):
                continue
            try:
                resource.delete(
                    name=entry.name,
                    namespace=entry.namespace or None,
                    body={"propagationPolicy": "Background"},
                )
            except NotFoundError:
                continue
            except DynamicApiError as err:
                raise ApplyFailed(f"{subject_of(live)} prune failed: {api_message(err)}") from err
            changes.append(Change(subject_of(live), DELETED))
        return changes

    def _resource(self, api_version: str, kind: str) -> Any:
        try:
            return self._client.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError as err:
            raise ApplyFailed(f'no matches for kind "{kind}" in version "{api_version}"') from err

    def _get(self, resource: Any, name: str, namespace: str | None) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = resource.get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None
        return found

    def _clean(self, resource: Any, live: dict[str, Any]) -> dict[str, Any]:
        ops = drift.cleanup_patch(live)
        if not ops:
            return live
        meta = live["metadata"]
        try:
            cleaned: dict[str, Any] = resource.patch(
                body=ops,
                name=meta["name"],
                namespace=meta.get("namespace"),
                content_type="application/json-patch+json",
                field_manager=drift.FIELD_MANAGER,
            ).to_dict()
        except DynamicApiError as err:
            raise ApplyFailed(
                f"{subject_of(live)} metadata cleanup failed: {api_message(err)}"
            ) from err
        return cleaned

    def _server_side_apply(
        self, resource: Any, obj: dict[str, Any], *, dry_run: bool
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        options = {"dry_run": "All"} if dry_run else {}
        try:
            applied: dict[str, Any] = resource.server_side_apply(
                body=obj,
                name=meta["name"],
                namespace=meta.get("namespace"),
                field_manager=drift.FIELD_MANAGER,
                force_conflicts=True,
                **options,
            ).to_dict()
        except DynamicApiError as err:
            step = "dry-run failed" if dry_run else "apply failed"
            raise ApplyFailed(f"{subject_of(obj)} {step}: {api_message(err)}") from err
        return applied


def _owned_by(live: dict[str, Any], owner: tuple[str, str]) -> bool:
    labels = live.get("metadata", {}).get("labels") or {}
    return (labels.get(OWNER_NAME), labels.get(OWNER_NAMESPACE)) == owner


def api_message(err: DynamicApiError) -> str:
    """The Status message of an API error (its reason when the body is not a Status)."""
    try:
        body = json.loads(err.body or "")
    except (TypeError, ValueError):
        return str(err.reason)
    return str(body.get("message", err.reason)) if isinstance(body, dict) else str(err.reason)
