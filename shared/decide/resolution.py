"""From WatchRule rules to the resource types to watch, over a discovery snapshot.

A rule names groups, versions and plural resources, each possibly ``*``. Expanding it is a
pure function of what the cluster serves (a ``Catalog``), so it is tested without a cluster.
Each group/resource is watched in one version only (objects that differ only in version are
one object, M4), the preferred one when the rule allows it. A WatchRule mirrors namespaced
objects; a cluster-scoped type it names explicitly is reported as unresolved, and a
ClusterWatchRule the other way round (P6: a tenant never reaches cluster-scoped objects
through its namespaced WatchRule).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from shared.model.crds import RuleView
from shared.model.resources import ApiResource, Catalog

WILDCARD = "*"
#: Types a ``*`` never selects: high-churn objects nobody keeps in Git, and Events (we write
#: Events ourselves, so mirroring them would feed on itself). The upstream operator excludes
#: the same set by default (facts/upstream-gitops-reverser.md §1.2). Naming one explicitly
#: still selects it.
WILDCARD_EXCLUDED = frozenset(
    {
        ("", "events"),
        ("events.k8s.io", "events"),
        ("", "pods"),
        ("", "endpoints"),
        ("discovery.k8s.io", "endpointslices"),
        ("coordination.k8s.io", "leases"),
        ("apps", "controllerrevisions"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    }
)


@dataclass(frozen=True, slots=True)
class Resolution:
    """What some rules select: types to watch, and names that matched nothing watchable."""

    resources: tuple[ApiResource, ...]
    unresolved: tuple[str, ...]


def _versions(rule: RuleView, catalog: Catalog, group: str) -> tuple[str, ...]:
    served = catalog.versions.get(group, ())
    if WILDCARD in rule.api_versions:
        return served
    if not rule.api_versions:
        return served[:1]
    return tuple(v for v in served if v in rule.api_versions)


def _groups(rule: RuleView, catalog: Catalog) -> tuple[str, ...]:
    if WILDCARD in rule.api_groups:
        return tuple(catalog.versions)
    return rule.api_groups


def _selectable(resource: ApiResource, namespaced: bool) -> bool:
    """A WatchRule selects namespaced types only, a ClusterWatchRule cluster-scoped ones only:
    neither kind of rule can reach the other's objects."""
    return resource.namespaced == namespaced and resource.watchable and "/" not in resource.resource


def _wildcard(
    catalog: Catalog, group: str, versions: tuple[str, ...], namespaced: bool
) -> list[ApiResource]:
    return [
        r
        for version in versions
        for r in catalog.in_group_version(group, version)
        if _selectable(r, namespaced) and (r.group, r.resource) not in WILDCARD_EXCLUDED
    ]


def _named(
    catalog: Catalog, group: str, versions: tuple[str, ...], name: str, namespaced: bool
) -> list[ApiResource]:
    return [
        r
        for version in versions
        for r in catalog.in_group_version(group, version)
        if r.resource == name and _selectable(r, namespaced)
    ]


def _label(rule: RuleView, group: str, name: str) -> str:
    versions = ",".join(rule.api_versions) or "preferred"
    return f"{group or 'core'}/{versions}/{name}"


def resolve_rule(rule: RuleView, catalog: Catalog, namespaced: bool = True) -> Resolution:
    """The types one rule selects (namespaced ones, or for a ClusterWatchRule cluster-scoped
    ones), and the explicit names it could not find."""
    found: list[ApiResource] = []
    missing: list[str] = []
    for name in rule.resources:
        hits: list[ApiResource] = []
        for group in _groups(rule, catalog):
            versions = _versions(rule, catalog, group)
            if name == WILDCARD:
                hits.extend(_wildcard(catalog, group, versions, namespaced))
                continue
            named = _named(catalog, group, versions, name, namespaced)
            if not named and WILDCARD not in rule.api_groups:
                missing.append(_label(rule, group, name))
            hits.extend(named)
        if not hits and name != WILDCARD and WILDCARD in rule.api_groups:
            missing.append(_label(rule, WILDCARD, name))
        found.extend(hits)
    return Resolution(tuple(found), tuple(missing))


def resolve_rules(
    rules: Iterable[RuleView], catalog: Catalog, namespaced: bool = True
) -> Resolution:
    """The union over rules, one version per group/resource (the catalog's order wins)."""
    chosen: dict[tuple[str, str], ApiResource] = {}
    missing: list[str] = []
    for rule in rules:
        result = resolve_rule(rule, catalog, namespaced)
        for resource in result.resources:
            chosen.setdefault((resource.group, resource.resource), resource)
        missing.extend(m for m in result.unresolved if m not in missing)
    return Resolution(tuple(chosen.values()), tuple(missing))
