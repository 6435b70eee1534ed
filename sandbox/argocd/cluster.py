"""The Argo CD double's hands on the destination cluster: read, apply and prune objects.

Facts: ../shared/facts/appliers.md A5. Every write of a sync carries the field manager
``argocd-controller``: with the sync option ``ServerSideApply=true`` a server-side apply with
force (``manager: argocd-controller, operation: Apply``), otherwise the client-side apply
kubectl does (create, or a three-way patch that keeps
``kubectl.kubernetes.io/last-applied-configuration``), sent with the same manager
(``operation: Update``). Differences: the client-side patch is a JSON merge patch for every
kind (kubectl sends a strategic merge patch for built-in kinds, which merges some lists by key
instead of replacing them).

``Pacing`` (``sandbox.flux.pacing``, shared with the Flux doubles) slows a sync down so a test
can watch it ``Running`` or put an API edit inside it: a pause before the first object and
between objects (``argocd_default()``: both 0, as the facts give the real controller no
latency), and a ``gate`` the sync waits on before it applies anything (open by default; a test
closes it to hold every sync, awaits ``holding``, and opens it to let them go).
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import dynamic
from kubernetes.dynamic.exceptions import DynamicApiError, NotFoundError, ResourceNotFoundError

from sandbox.argocd.diff import api_version
from sandbox.flux.pacing import Pacing
from sandbox.flux.ssa import api_message, subject_of

FIELD_MANAGER = "argocd-controller"  # common.ArgoCDSSAManager (A5)
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MERGE_PATCH = "application/merge-patch+json"
CREATED, CONFIGURED, PRUNED = "created", "configured", "pruned"
__all__ = ["Cluster", "Pacing", "SyncFailed", "three_way_patch"]


class SyncFailed(Exception):
    """An object could not be applied or pruned; the message names it."""


class Cluster:
    """Objects of one destination cluster, through the official dynamic client."""

    def __init__(self, client: dynamic.DynamicClient) -> None:
        self._client = client

    def place(self, obj: dict[str, Any], namespace: str) -> None:
        """Put a namespaced object without a namespace into the destination's (in place)."""
        resource = self._resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        if resource is not None and resource.namespaced and not meta.get("namespace"):
            meta["namespace"] = namespace
        if resource is not None and not resource.namespaced:
            meta.pop("namespace", None)

    def live(self, api: str, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
        """The live object, or None when it (or its kind) does not exist."""
        resource = self._resource(api, kind)
        if resource is None:
            return None
        try:
            found: dict[str, Any] = resource.get(name=name, namespace=namespace or None).to_dict()
        except NotFoundError:
            return None
        return found

    def apply(self, obj: dict[str, Any], server_side: bool) -> str:
        """Apply one object as ``argocd-controller``; ``created`` or ``configured``."""
        resource = self._resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        if resource is None:
            raise SyncFailed(
                f'{subject_of(obj)}: no matches for kind "{obj["kind"]}" '
                f'in version "{obj["apiVersion"]}"'
            )
        if resource.namespaced and not meta.get("namespace"):
            raise SyncFailed(f"{subject_of(obj)}: namespace not specified")
        live = self.live(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace", ""))
        where = {"name": meta["name"], "namespace": meta.get("namespace") or None}
        try:
            if server_side:
                resource.server_side_apply(
                    body=obj, field_manager=FIELD_MANAGER, force_conflicts=True, **where
                )
            elif live is None:
                resource.create(
                    body=_with_last_applied(obj),
                    namespace=where["namespace"],
                    field_manager=FIELD_MANAGER,
                )
            else:
                resource.patch(
                    body=three_way_patch(_last_applied(live), obj),
                    content_type=MERGE_PATCH,
                    field_manager=FIELD_MANAGER,
                    **where,
                )
        except DynamicApiError as err:
            raise SyncFailed(f"{subject_of(obj)}: {api_message(err)}") from err
        return CREATED if live is None else CONFIGURED

    def prune(self, entry: dict[str, Any]) -> None:
        """Delete the object a ``status.resources[]`` entry names (gone already is fine)."""
        resource = self._resource(api_version(entry), str(entry["kind"]))
        if resource is None:
            return
        try:
            resource.delete(
                name=entry["name"],
                namespace=entry.get("namespace") or None,
                body={"propagationPolicy": "Foreground"},
            )
        except NotFoundError:
            return
        except DynamicApiError as err:
            raise SyncFailed(
                f"{entry['kind']}/{entry.get('namespace', '')}/{entry['name']}: "
                f"prune failed: {api_message(err)}"
            ) from err

    def _resource(self, api: str, kind: str) -> Any:
        try:
            return self._client.resources.get(api_version=api, kind=kind)
        except ResourceNotFoundError:
            return None


def three_way_patch(last: dict[str, Any] | None, desired: dict[str, Any]) -> dict[str, Any]:
    """kubectl's client-side apply patch: the desired object, the new last-applied
    configuration, and a null for every field the last one set that the desired one drops."""
    patch = _with_last_applied(desired)
    if last is not None:
        _drop_removed(patch, last, desired)
    return patch


def _drop_removed(patch: dict[str, Any], last: dict[str, Any], desired: dict[str, Any]) -> None:
    for key, value in last.items():
        if key not in desired:
            patch[key] = None
        elif isinstance(value, dict) and isinstance(desired[key], dict):
            _drop_removed(patch[key], value, desired[key])


def _with_last_applied(obj: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(json.dumps(obj))
    meta = body["metadata"]
    meta["annotations"] = {
        **(meta.get("annotations") or {}),
        LAST_APPLIED: json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n",
    }
    return dict(body)


def _last_applied(live: dict[str, Any]) -> dict[str, Any] | None:
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        parsed = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
