"""The kinds table: which resources the API double serves, and how each behaves.

One ``ResourceType`` per (group, version, plural). Built-in kinds are listed here with the
strategy flags the real registry gives them (pkg/registry/*/strategy.go: generation, status
subresource, unconditional update, the object a delete returns); custom resources come from
CRD files read at start, one entry per served version, carrying that version's OpenAPI
schema and printer columns. Objects are stored per (group, plural), whatever the version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")
CRD_GROUP = "apiextensions.k8s.io"
# libyaml's loader parses the large Flux/Argo CRDs about ten times faster than pure Python.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class ResourceType:
    """One served resource and the strategy flags the real registry gives it."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...] = ALL_VERBS
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    custom: bool = False
    tracks_generation: bool = False
    unconditional_update: bool = True
    create_on_update: bool = False
    return_deleted_object: bool = False
    name_rule: str = "subdomain"
    schema: Mapping[str, Any] | None = field(default=None, compare=False)
    printer_columns: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    extra_field_labels: tuple[str, ...] = ()
    storage: tuple[str, str] | None = None  # another resource's objects, seen through this one

    @property
    def api_version(self) -> str:
        """``v1`` or ``group/version`` as written in objects."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> tuple[str, str]:
        """The storage key of this resource: all versions share one set of objects."""
        return self.storage or (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        """The kind of a list response."""
        return f"{self.kind}List"


def _core(kind: str, plural: str, **flags: Any) -> ResourceType:
    return ResourceType("", "v1", kind, plural, kind.lower(), **flags)


_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

BUILTINS: tuple[ResourceType, ...] = (
    _core(
        "Namespace",
        "namespaces",
        namespaced=False,
        short_names=("ns",),
        status_subresource=True,
        return_deleted_object=True,
        name_rule="label",
        extra_field_labels=("status.phase",),
    ),
    _core("ConfigMap", "configmaps", namespaced=True, short_names=("cm",)),
    _core("Secret", "secrets", namespaced=True, extra_field_labels=("type",)),
    _core(
        "Service",
        "services",
        namespaced=True,
        short_names=("svc",),
        categories=("all",),
        status_subresource=True,
        name_rule="dns1035",
    ),
    _core(
        "ServiceAccount",
        "serviceaccounts",
        namespaced=True,
        short_names=("sa",),
        return_deleted_object=True,
    ),
    _core(
        "Event",
        "events",
        namespaced=True,
        short_names=("ev",),
        create_on_update=True,
        extra_field_labels=_EVENT_FIELDS,
    ),
    ResourceType(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        "event",
        namespaced=True,
        short_names=("ev",),
        create_on_update=True,
        storage=("", "events"),
    ),
    ResourceType(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        namespaced=True,
        short_names=("deploy",),
        categories=("all",),
        status_subresource=True,
        tracks_generation=True,
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        "role",
        namespaced=True,
        name_rule="path",
    ),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        "rolebinding",
        namespaced=True,
        name_rule="path",
    ),
    # cluster-scoped RBAC, as the Go operator's chart installs it (facts/upstream §6)
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        "clusterrole",
        namespaced=False,
        name_rule="path",
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        namespaced=False,
        verbs=("create",),
    ),
    ResourceType(
        CRD_GROUP,
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        "customresourcedefinition",
        namespaced=False,
        verbs=READ_VERBS,
        short_names=("crd", "crds"),
        status_subresource=True,
    ),
)


def load_crds(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document found in the given YAML files."""
    crds: list[dict[str, Any]] = []
    for path in paths:
        with path.open(encoding="utf-8") as handle:
            for doc in yaml.load_all(handle, Loader=_LOADER):
                if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                    crds.append(doc)
    return crds


def crd_resource_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of a CRD."""
    spec = crd["spec"]
    names = spec["names"]
    types = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        types.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                singular=names.get("singular", names["kind"].lower()),
                namespaced=spec.get("scope", "Namespaced") == "Namespaced",
                short_names=tuple(names.get("shortNames", ())),
                categories=tuple(names.get("categories", ())),
                status_subresource="status" in (version.get("subresources") or {}),
                custom=True,
                tracks_generation=True,
                unconditional_update=False,
                schema=(version.get("schema") or {}).get("openAPIV3Schema"),
                printer_columns=tuple(version.get("additionalPrinterColumns") or ()),
            )
        )
    return types


class Registry:
    """Lookup of served resources by (group, version, plural), in discovery order."""

    def __init__(self, types: Sequence[ResourceType]) -> None:
        self._by_path = {(t.group, t.version, t.plural): t for t in types}
        self._types = tuple(types)

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource served at that path, if any."""
        return self._by_path.get((group, version, plural))

    def types(self) -> tuple[ResourceType, ...]:
        """All served resources, in registration order."""
        return self._types

    def group_versions(self) -> dict[str, list[str]]:
        """Named groups (core excluded) and their versions, preferred version first."""
        groups: dict[str, list[str]] = {}
        for t in self._types:
            if t.group and t.version not in groups.setdefault(t.group, []):
                groups[t.group].append(t.version)
        return groups

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        """The resources of one group/version."""
        return [t for t in self._types if t.group == group and t.version == version]

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        """The first served version of a group/resource (used for cross-resource writes)."""
        return next((t for t in self._types if t.group_resource == (group, plural)), None)


def build_registry(crds: Sequence[Mapping[str, Any]]) -> Registry:
    """Built-ins followed by every served version of every CRD."""
    types = list(BUILTINS)
    for crd in crds:
        types.extend(crd_resource_types(crd))
    return Registry(types)
