"""The OpenAPI v3 documents kubectl reads before it writes.

kubectl 1.32 decides whether the server validates fields itself by looking, in
``/openapi/v3/<group-version>``, for a PATCH operation tagged with the kind's
``x-kubernetes-group-version-kind`` that takes a ``fieldValidation`` query parameter
(kubectl pkg/cmd/util ``QueryParamVerifierV3``). Finding it, kubectl sends
``fieldValidation=Strict`` and leaves validation to the server; not finding it, it downloads
the protobuf OpenAPI v2 document to validate client-side. So each group-version document
lists one PATCH operation per kind, with no schemas: the request bodies deliberately omit the
strategic-merge content type, so ``kubectl apply`` builds its patches from the types compiled
into kubectl (built-ins) or as JSON merge patches (custom resources), as with a server whose
OpenAPI has no schema for the kind.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sandbox.kube.resources import Registry, ResourceType

Obj = dict[str, Any]

_PATCH_CONTENT = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)
_QUERY_PARAMETERS = ("dryRun", "fieldManager", "fieldValidation", "force")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _item_path(t: ResourceType) -> str:
    scope = "/namespaces/{namespace}" if t.namespaced else ""
    return f"/{_gv_path(t.group, t.version)}{scope}/{t.plural}/{{name}}"


def _patch_operation(t: ResourceType) -> Obj:
    return {
        "operationId": f"patch{t.kind}",
        "x-kubernetes-action": "patch",
        "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
        "parameters": [
            {"name": name, "in": "query", "schema": {"type": "string"}}
            for name in _QUERY_PARAMETERS
        ],
        "requestBody": {
            "content": {c: {"schema": {"type": "object"}} for c in _PATCH_CONTENT},
            "required": True,
        },
        "responses": {"200": {"description": "OK"}},
    }


def group_version_document(registry: Registry, group: str, version: str) -> Obj | None:
    """``/openapi/v3/api/v1`` or ``/openapi/v3/apis/<g>/<v>``; None when not served."""
    types = [t for t in registry.in_group_version(group, version) if "patch" in t.verbs]
    if not registry.in_group_version(group, version):
        return None
    paths = {_item_path(t): {"patch": _patch_operation(t)} for t in types}
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def root_document(registry: Registry) -> Obj:
    """``/openapi/v3``: one entry per served group-version."""
    versions = [("", "v1")] + [(g, v) for g, vs in registry.group_versions().items() for v in vs]
    paths = {}
    for group, version in versions:
        path = _gv_path(group, version)
        digest = hashlib.sha256(path.encode()).hexdigest()[:16].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}
