"""ClusterWatchRules: which cluster-scoped objects a GitTarget mirrors, and who may ask (P6).

A ClusterWatchRule is cluster-scoped, so only who may create cluster-wide objects writes one;
it names its GitTarget by namespace and name. Its objects (Namespaces, ClusterRoles, CRDs,
...) are read through the GitTarget's ClusterProvider and written under ``_cluster/`` in the
GitTarget's folder (M4). The isolation rules:

- a namespaced WatchRule never selects a cluster-scoped type (``shared.decide.resolution``),
  so a tenant reaches cluster-scoped objects only through a ClusterWatchRule an administrator
  wrote;
- the GitTarget's ClusterProvider must admit its namespace (``spec.accessFrom``, else
  ``GitTargetNamespaceNotAuthorized``, the Go operator's reason) and must let that namespace
  receive cluster-scoped objects (``spec.clusterScoped.accessFrom``; absent admits none, else
  ``ClusterScopeNotAdmitted``): an administrator of the source cluster opts in per tenant, as
  for cross-namespace appliers (T2), instead of every admitted tenant being a possible
  destination of the cluster's RBAC or CRDs;
- the GitTarget itself must be served (valid); its prune mode, sensitive kinds and branch
  apply as for its WatchRules.

Admission is decided here, purely, and checked again on every pass: a ClusterProvider that
withdraws the allowance stops the watches on the next pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from shared.decide.conditions import Problem
from shared.decide.resolution import resolve_rule, resolve_rules
from shared.decide.selectors import admits
from shared.decide.targets import CLUSTER_PROVIDER_NOT_FOUND, NOT_ADMITTED, Verdict
from shared.decide.watches import (
    CLUSTER_UNAVAILABLE,
    GIT_TARGET_NOT_FOUND,
    UNRESOLVED_RESOURCES,
    ServedTarget,
    WatchKey,
    WatchSpec,
    invalid_rule,
    merged,
    ready_before,
    rule_watch,
)
from shared.model.crds import ClusterProviderView, ClusterWatchRuleView, GitTargetView
from shared.model.resources import Catalog


@dataclass(frozen=True, slots=True)
class Sources:
    """The ClusterProviders by name and the namespaces' labels: what admission reads."""

    clusters: Mapping[str, ClusterProviderView]
    namespace_labels: Mapping[str, Mapping[str, str]]

    def admission(
        self, rule: ClusterWatchRuleView, target: GitTargetView | None, verdict: Verdict | None
    ) -> Problem | None:
        """``admission`` of the rule, with the GitTarget's ClusterProvider and labels."""
        cluster = self.clusters.get(target.cluster_provider) if target is not None else None
        labels = self.namespace_labels.get(rule.target_namespace, {})
        return admission(rule, target, verdict, cluster, labels)


NAMESPACE_NOT_AUTHORIZED = "GitTargetNamespaceNotAuthorized"
CLUSTER_SCOPE_NOT_ADMITTED = "ClusterScopeNotAdmitted"
#: The namespace of a cluster-wide watch (its key's, and the list/watch call's).
CLUSTER_WIDE = ""


def admission(
    rule: ClusterWatchRuleView,
    target: GitTargetView | None,
    verdict: Verdict | None,
    cluster: ClusterProviderView | None,
    namespace_labels: Mapping[str, str],
) -> Problem | None:
    """Why the rule may not feed its GitTarget (None when it may). Each message names the
    GitTarget (namespace/name) and, once the GitTarget is found, its ClusterProvider: the rule
    is cluster-scoped, so its status is read by an administrator who needs both to act
    (docs/crds.md)."""
    where = f"GitTarget {rule.target_namespace}/{rule.target}"
    if target is None:
        return Problem(GIT_TARGET_NOT_FOUND, f"{where} not found")
    provider = f"ClusterProvider {target.cluster_provider}"
    if cluster is None or (verdict is not None and verdict.reason == CLUSTER_PROVIDER_NOT_FOUND):
        return Problem(CLUSTER_PROVIDER_NOT_FOUND, f"{where}: {provider} not found")
    ns = target.meta.namespace
    if (verdict is not None and verdict.reason == NOT_ADMITTED) or not admits(
        cluster.access_from, ns, namespace_labels
    ):
        return Problem(
            NAMESPACE_NOT_AUTHORIZED,
            f"{where}: {provider} does not admit namespace {ns} (spec.accessFrom)",
        )
    if not admits(cluster.cluster_scoped, ns, namespace_labels):
        return Problem(
            CLUSTER_SCOPE_NOT_ADMITTED,
            f"{where}: {provider} does not let namespace {ns} receive cluster-scoped objects "
            "(spec.clusterScoped.accessFrom)",
        )
    return None


def cluster_rule_problems(
    rule: ClusterWatchRuleView,
    admitted: Problem | None,
    cluster_problem: Problem | None,
    catalog: Catalog | None,
) -> list[Problem]:
    """Why a ClusterWatchRule is not Ready: a rule it cannot use, refused, no usable cluster,
    or names that resolve to no cluster-scoped, watchable type."""
    invalid = invalid_rule(rule.rules)
    if invalid is not None:
        return [invalid]
    if admitted is not None:
        return [admitted]
    if cluster_problem is not None:
        return [cluster_problem]
    if catalog is None:
        return [Problem(CLUSTER_UNAVAILABLE, "the source cluster's API cannot be read yet", False)]
    missing = resolve_rules(rule.rules, catalog, namespaced=False).unresolved
    if missing:
        names = ", ".join(missing)
        return [Problem(UNRESOLVED_RESOURCES, f"no cluster-scoped, watchable resource: {names}")]
    return []


def desired_cluster_watches(
    targets: Iterable[ServedTarget],
    rules: Iterable[ClusterWatchRuleView],
    sources: Sources,
    catalogs: Mapping[str, Catalog],
    started: str = "",
) -> dict[WatchKey, WatchSpec]:
    """Every cluster-wide watch the admitted ClusterWatchRules ask for, one per (served
    GitTarget, cluster-scoped type); rules selecting one type merge their operations."""
    by_name = {(s.target.meta.namespace, s.target.meta.name): s for s in targets}
    wanted: dict[WatchKey, WatchSpec] = {}
    for rule in rules:
        served = by_name.get((rule.target_namespace, rule.target))
        if served is None:
            continue
        catalog = catalogs.get(served.target.cluster_provider)
        if catalog is None or sources.admission(rule, served.target, None) is not None:
            continue
        if invalid_rule(rule.rules) is not None:
            continue
        before = ready_before(rule, started)
        for entry in rule.rules:
            for resource in resolve_rule(entry, catalog, namespaced=False).resources:
                spec = rule_watch(served, resource, entry, before, namespace=CLUSTER_WIDE)
                wanted[spec.key] = merged(wanted.get(spec.key), spec)
    return wanted
