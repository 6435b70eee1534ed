"""ClusterWatchRule admission and watches (P6), as pure functions of the objects read.

Facts: facts/upstream-gitops-reverser.md §2.4 (a ClusterWatchRule names its GitTarget by
namespace and name; the target's namespace must be admitted by its ClusterProvider, reason
``GitTargetNamespaceNotAuthorized``; no ``sourceNamespace``), §3.1 (cluster-scoped objects go
under ``_cluster``). Beyond the Go operator: the ClusterProvider must also let the namespace
receive cluster-scoped objects (``spec.clusterScoped.accessFrom``), and a namespaced
WatchRule never selects a cluster-scoped type.
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.cluster_rules import (
    CLUSTER_SCOPE_NOT_ADMITTED,
    NAMESPACE_NOT_AUTHORIZED,
    Sources,
    admission,
    cluster_rule_problems,
    desired_cluster_watches,
)
from shared.decide.resolution import resolve_rule
from shared.decide.targets import CLUSTER_PROVIDER_NOT_FOUND, NOT_ADMITTED, Verdict
from shared.decide.watches import GIT_TARGET_NOT_FOUND, UNRESOLVED_RESOURCES, ServedTarget
from shared.model.crds import (
    ClusterWatchRuleView,
    RuleView,
    parse_cluster_provider,
    parse_cluster_watch_rule,
    parse_git_target,
)
from shared.model.events import OPERATIONS
from shared.model.ids import BranchKey
from shared.model.resources import ApiResource, Catalog

RW = frozenset({"get", "list", "watch"})
CATALOG = Catalog(
    versions={"": ("v1",), "rbac.authorization.k8s.io": ("v1",)},
    resources=(
        ApiResource("", "v1", "configmaps", "ConfigMap", True, RW),
        ApiResource("", "v1", "namespaces", "Namespace", False, RW),
        ApiResource("rbac.authorization.k8s.io", "v1", "roles", "Role", True, RW),
        ApiResource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False, RW),
    ),
)


def _cluster(**spec: Any) -> Any:
    return parse_cluster_provider({"metadata": {"name": "default"}, "spec": spec})


def _target(ns: str = "team-a", name: str = "apps") -> ServedTarget:
    raw = {
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}"},
        "spec": {"providerRef": {"name": "repo"}, "branch": "main", "path": "apps"},
    }
    return ServedTarget(parse_git_target(raw), BranchKey("bk"))


def _rule(resources: list[str], ns: str = "team-a", groups: list[str] | None = None) -> Any:
    spec = {
        "targetRef": {"name": "apps", "namespace": ns},
        "rules": [{"apiGroups": groups or ["rbac.authorization.k8s.io"], "resources": resources}],
    }
    return parse_cluster_watch_rule({"metadata": {"name": "r"}, "spec": spec})


ADMITTING = _cluster(
    accessFrom={"names": ["team-a"]}, clusterScoped={"accessFrom": {"names": ["team-a"]}}
)


def test_a_rule_names_its_target_by_namespace_and_name() -> None:
    rule = _rule(["clusterroles"])
    assert isinstance(rule, ClusterWatchRuleView)
    assert (rule.target_namespace, rule.target) == ("team-a", "apps")


def test_an_admitted_rule_watches_cluster_wide() -> None:
    """P6: one watch per cluster-scoped type, in no namespace, for the GitTarget."""
    sources = Sources({"default": ADMITTING}, {"team-a": {}})
    watches = desired_cluster_watches(
        [_target()], [_rule(["clusterroles"])], sources, {"default": CATALOG}
    )
    [(key, spec)] = watches.items()
    assert (key.group, key.resource, key.namespace) == (
        "rbac.authorization.k8s.io",
        "clusterroles",
        "",
    )
    assert spec.target.namespace == "team-a"
    assert spec.operations == frozenset(OPERATIONS)


def test_without_cluster_scoped_access_nothing_is_watched() -> None:
    """P6: admitting the namespace (accessFrom) is not enough; the ClusterProvider must let it
    receive cluster-scoped objects."""
    only_admitted = _cluster(accessFrom={"names": ["team-a"]})
    sources = Sources({"default": only_admitted}, {"team-a": {}})
    rule = _rule(["clusterroles"])
    assert desired_cluster_watches([_target()], [rule], sources, {"default": CATALOG}) == {}
    problem = admission(rule, _target().target, Verdict(), only_admitted, {})
    assert problem is not None and problem.reason == CLUSTER_SCOPE_NOT_ADMITTED
    assert "team-a" in problem.message


@pytest.mark.parametrize(
    ("cluster", "verdict", "reason"),
    [
        (_cluster(accessFrom={"names": ["team-a"]}), Verdict(), CLUSTER_SCOPE_NOT_ADMITTED),
        (_cluster(accessFrom={"names": ["team-b"]}), Verdict(), NAMESPACE_NOT_AUTHORIZED),
        (ADMITTING, Verdict(NOT_ADMITTED, "not admitted"), NAMESPACE_NOT_AUTHORIZED),
        (None, Verdict(), CLUSTER_PROVIDER_NOT_FOUND),
        (ADMITTING, Verdict(CLUSTER_PROVIDER_NOT_FOUND, "gone"), CLUSTER_PROVIDER_NOT_FOUND),
    ],
)
def test_every_refusal_names_the_git_target_and_the_cluster_provider(
    cluster: Any, verdict: Verdict, reason: str
) -> None:
    """docs/crds.md: a refused ClusterWatchRule's message names the GitTarget (namespace/name)
    and the ClusterProvider (issue 23: ClusterScopeNotAdmitted named only the namespace)."""
    problem = admission(_rule(["clusterroles"]), _target().target, verdict, cluster, {})
    assert problem is not None and problem.reason == reason
    assert "GitTarget team-a/apps" in problem.message
    assert "ClusterProvider default" in problem.message


def test_a_missing_git_target_is_named() -> None:
    problem = admission(_rule(["clusterroles"]), None, None, ADMITTING, {})
    assert problem is not None and problem.reason == GIT_TARGET_NOT_FOUND
    assert "GitTarget team-a/apps" in problem.message


def test_another_namespace_is_not_admitted_by_the_others_allowance() -> None:
    """A tenant admitted for cluster-scoped objects does not make another one admitted."""
    both = _cluster(
        accessFrom={"names": ["team-a", "team-b"]},
        clusterScoped={"accessFrom": {"names": ["team-a"]}},
    )
    problem = admission(
        _rule(["clusterroles"], ns="team-b"), _target("team-b").target, Verdict(), both, {}
    )
    assert problem is not None and problem.reason == CLUSTER_SCOPE_NOT_ADMITTED


def test_a_selector_admits_by_the_namespaces_labels() -> None:
    by_label = _cluster(
        accessFrom={"selector": {}},
        clusterScoped={"accessFrom": {"selector": {"matchLabels": {"platform": "true"}}}},
    )
    rule, target = _rule(["clusterroles"]), _target().target
    assert admission(rule, target, Verdict(), by_label, {"platform": "true"}) is None
    refused = admission(rule, target, Verdict(), by_label, {"platform": "false"})
    assert refused is not None and refused.reason == CLUSTER_SCOPE_NOT_ADMITTED


def test_a_namespace_the_cluster_provider_does_not_admit_is_not_authorized() -> None:
    """facts §2.4: GitTargetNamespaceNotAuthorized, whatever clusterScoped says."""
    cluster = _cluster(clusterScoped={"accessFrom": {"names": ["team-a"]}})
    problem = admission(
        _rule(["clusterroles"]), _target().target, Verdict(NOT_ADMITTED, "x"), cluster, {}
    )
    assert problem is not None and problem.reason == NAMESPACE_NOT_AUTHORIZED


def test_a_missing_target_is_reported() -> None:
    problem = admission(_rule(["clusterroles"]), None, None, ADMITTING, {})
    assert problem is not None and problem.reason == GIT_TARGET_NOT_FOUND
    assert "team-a/apps" in problem.message


def test_a_rule_for_an_unserved_target_watches_nothing() -> None:
    sources = Sources({"default": ADMITTING}, {})
    assert (
        desired_cluster_watches([], [_rule(["clusterroles"])], sources, {"default": CATALOG}) == {}
    )


def test_namespaced_types_are_unresolved_for_a_cluster_watch_rule() -> None:
    """A ClusterWatchRule selects cluster-scoped types only: naming roles resolves nothing."""
    problems = cluster_rule_problems(_rule(["roles", "clusterroles"]), None, None, CATALOG)
    assert [p.reason for p in problems] == [UNRESOLVED_RESOURCES]
    assert "roles" in problems[0].message
    assert cluster_rule_problems(_rule(["clusterroles"]), None, None, CATALOG) == []


def test_a_namespaced_watch_rule_never_selects_cluster_scoped_types() -> None:
    """The isolation rule: a tenant's WatchRule with * in every group reaches namespaced
    types only; naming namespaces or clusterroles resolves to nothing."""
    everything = RuleView(("*",), (), ("*",), frozenset(OPERATIONS))
    picked = {r.resource for r in resolve_rule(everything, CATALOG).resources}
    assert picked == {"configmaps", "roles"}
    named = RuleView(
        ("", "rbac.authorization.k8s.io"), (), ("namespaces", "clusterroles"), frozenset(OPERATIONS)
    )
    assert resolve_rule(named, CATALOG).resources == ()
    cluster_wide = {
        r.resource for r in resolve_rule(everything, CATALOG, namespaced=False).resources
    }
    assert cluster_wide == {"namespaces", "clusterroles"}


def test_rules_on_one_type_merge_their_operations() -> None:
    first = parse_cluster_watch_rule(
        {
            "metadata": {"name": "a"},
            "spec": {
                "targetRef": {"name": "apps", "namespace": "team-a"},
                "rules": [
                    {"apiGroups": [""], "resources": ["namespaces"], "operations": ["CREATE"]}
                ],
            },
        }
    )
    second = parse_cluster_watch_rule(
        {
            "metadata": {"name": "b"},
            "spec": {
                "targetRef": {"name": "apps", "namespace": "team-a"},
                "rules": [
                    {"apiGroups": [""], "resources": ["namespaces"], "operations": ["DELETE"]}
                ],
            },
        }
    )
    sources = Sources({"default": ADMITTING}, {})
    watches = desired_cluster_watches([_target()], [first, second], sources, {"default": CATALOG})
    [spec] = watches.values()
    assert spec.operations == frozenset({"CREATE", "DELETE"})
