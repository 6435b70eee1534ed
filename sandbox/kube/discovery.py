"""Discovery documents: what a client learns before it makes any resource request.

The official client's DynamicClient reads ``/version``, ``/api``, ``/apis`` and
``/apis/<group>/<version>`` (APIVersions, APIGroupList, APIResourceList with verbs,
namespaced, kind, shortNames, categories and ``<resource>/status`` entries). kubectl 1.32
first asks ``/api`` and ``/apis`` for the aggregated form
(``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``,
KEP-3352) and takes one request per root instead of one per group-version.
"""

from __future__ import annotations

from typing import Any

from sandbox.kube.resources import Registry, ResourceType

Obj = dict[str, Any]

SERVER_VERSION: Obj = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-sandbox",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-12-11T00:00:00Z",
    "goVersion": "go1.23.3",
    "compiler": "gc",
    "platform": "linux/amd64",
}
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
STATUS_VERBS = ["get", "patch", "update"]


def wants_aggregated(accept: str | None) -> bool:
    """True when the client prefers the aggregated v2 discovery document."""
    if not accept:
        return False
    first = accept.split(",")[0].replace(" ", "")
    return "as=APIGroupDiscoveryList" in first and "v=v2;" in first + ";"


def api_versions(server_address: str) -> Obj:
    """``/api``: the legacy core group's versions."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_versions(group: str, versions: list[str]) -> Obj:
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> Obj:
    """``/apis``: every named group with its versions."""
    groups = [_group_versions(g, vs) for g, vs in registry.group_versions().items()]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> Obj | None:
    """``/apis/<group>``: one group, or None when not served."""
    versions = registry.group_versions().get(group)
    if versions is None:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_versions(group, versions)}


def _resource_entry(t: ResourceType) -> Obj:
    entry: Obj = {
        "name": t.plural,
        "singularName": t.singular,
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": list(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    return entry


def _status_entry(t: ResourceType) -> Obj:
    return {
        "name": f"{t.plural}/status",
        "singularName": "",
        "namespaced": t.namespaced,
        "kind": t.kind,
        "verbs": STATUS_VERBS,
    }


def api_resource_list(registry: Registry, group: str, version: str) -> Obj | None:
    """``/api/v1`` or ``/apis/<group>/<version>``: the resources served there."""
    types = registry.in_group_version(group, version)
    if not types:
        return None
    resources = []
    for t in types:
        resources.append(_resource_entry(t))
        if t.status_subresource:
            resources.append(_status_entry(t))
    group_version = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _aggregated_resource(t: ResourceType) -> Obj:
    kind = {"group": t.group, "version": t.version, "kind": t.kind}
    entry: Obj = {
        "resource": t.plural,
        "responseKind": kind,
        "scope": "Namespaced" if t.namespaced else "Cluster",
        "singularResource": t.singular,
        "verbs": list(t.verbs),
    }
    if t.short_names:
        entry["shortNames"] = list(t.short_names)
    if t.categories:
        entry["categories"] = list(t.categories)
    if t.status_subresource:
        entry["subresources"] = [
            {"subresource": "status", "responseKind": kind, "verbs": STATUS_VERBS}
        ]
    return entry


def aggregated(registry: Registry, core: bool) -> Obj:
    """The APIGroupDiscoveryList of ``/api`` (core) or ``/apis`` (named groups)."""
    groups = {"": ["v1"]} if core else registry.group_versions()
    items = []
    for group, versions in groups.items():
        entries = [
            {
                "version": v,
                "freshness": "Current",
                "resources": [_aggregated_resource(t) for t in registry.in_group_version(group, v)],
            }
            for v in versions
        ]
        metadata: Obj = (
            {"name": group, "creationTimestamp": None} if group else {"creationTimestamp": None}
        )
        items.append({"metadata": metadata, "versions": entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }
