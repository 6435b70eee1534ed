"""Which watches the WatchRules ask for (M1; behaviour.md §1 WatchRule), as pure functions of
a discovery snapshot. A rule without apiVersions uses the group's preferred version, as
``/apis`` names it (kubernetes.io/docs/reference/kubernetes-api/definitions/api-group-v1-meta/:
APIGroup ``preferredVersion``)."""

from __future__ import annotations

from shared.decide.conditions import Problem
from shared.decide.resolution import resolve_rule, resolve_rules
from shared.decide.watches import (
    ServedTarget,
    WatchKey,
    desired_watches,
    ready_before,
    rule_problems,
)
from shared.model.crds import Condition, Meta, RuleView, WatchRuleView, parse_git_target
from shared.model.events import OPERATIONS
from shared.model.ids import BranchKey, GitTargetUid
from shared.model.resources import ApiResource, Catalog

RW = frozenset({"get", "list", "watch", "create"})
CATALOG = Catalog(
    versions={"": ("v1",), "apps": ("v1",), "example.com": ("v2", "v1"), "events.k8s.io": ("v1",)},
    resources=(
        ApiResource("", "v1", "configmaps", "ConfigMap", True, RW),
        ApiResource("", "v1", "secrets", "Secret", True, RW),
        ApiResource("", "v1", "events", "Event", True, RW),
        ApiResource("", "v1", "namespaces", "Namespace", False, RW),
        ApiResource("", "v1", "bindings", "Binding", True, frozenset({"create"})),
        ApiResource("apps", "v1", "deployments", "Deployment", True, RW),
        ApiResource("example.com", "v2", "widgets", "Widget", True, RW),
        ApiResource("example.com", "v1", "widgets", "Widget", True, RW),
        ApiResource("example.com", "v1", "gadgets", "Gadget", True, RW),
        ApiResource("events.k8s.io", "v1", "events", "Event", True, RW),
    ),
)
ALL = frozenset(OPERATIONS)


def _rule(
    groups: tuple[str, ...],
    resources: tuple[str, ...],
    versions: tuple[str, ...] = (),
    ops: frozenset[str] = ALL,
) -> RuleView:
    return RuleView(groups, versions, resources, ops)  # type: ignore[arg-type]


def _names(rule: RuleView) -> list[tuple[str, str, str]]:
    return [(r.group, r.version, r.resource) for r in resolve_rule(rule, CATALOG).resources]


def test_named_resource_in_the_preferred_version() -> None:
    assert _names(_rule(("example.com",), ("widgets",))) == [("example.com", "v2", "widgets")]
    assert _names(_rule(("example.com",), ("gadgets",))) == []  # not in the preferred v2
    assert _names(_rule(("example.com",), ("gadgets",), ("v1",))) == [
        ("example.com", "v1", "gadgets")
    ]


def test_wildcard_resources_skip_cluster_scoped_unwatchable_and_noisy_types() -> None:
    assert _names(_rule(("",), ("*",))) == [("", "v1", "configmaps"), ("", "v1", "secrets")]


def test_wildcard_groups_and_versions_then_one_version_per_resource() -> None:
    every = resolve_rules([_rule(("*",), ("*",), ("*",))], CATALOG).resources
    assert [(r.group, r.version, r.resource) for r in every] == [
        ("", "v1", "configmaps"),
        ("", "v1", "secrets"),
        ("apps", "v1", "deployments"),
        ("example.com", "v2", "widgets"),
        ("example.com", "v1", "gadgets"),
    ]


def test_names_that_resolve_to_nothing_are_reported() -> None:
    result = resolve_rules([_rule(("",), ("configmaps", "widgets", "namespaces"))], CATALOG)
    assert [r.resource for r in result.resources] == ["configmaps"]
    assert result.unresolved == ("core/preferred/widgets", "core/preferred/namespaces")
    assert resolve_rules([_rule(("*",), ("widgets",))], CATALOG).unresolved == ()
    assert resolve_rules([_rule(("*",), ("nothing",))], CATALOG).unresolved == (
        "*/preferred/nothing",
    )
    assert resolve_rules([_rule(("",), ("events",))], CATALOG).unresolved == ()  # named: ok


def _target(ns: str, name: str, uid: str, cluster: str = "default") -> ServedTarget:
    raw = {
        "metadata": {"namespace": ns, "name": name, "uid": uid, "generation": 1},
        "spec": {
            "providerRef": {"name": "p"},
            "branch": "main",
            "path": "x",
            "clusterProviderRef": {"name": cluster},
            "prune": {"mode": "Always"},
        },
    }
    return ServedTarget(parse_git_target(raw), BranchKey(f"bk-{uid}"))


def _watch_rule(ns: str, target: str, *rules: RuleView) -> WatchRuleView:
    return WatchRuleView(Meta(ns, f"wr-{target}", "wr", 1, "1"), target, rules)


def test_desired_watches_join_rules_to_served_targets_in_their_namespace() -> None:
    targets = [_target("a", "t", "uid-a"), _target("b", "t", "uid-b", cluster="far")]
    rules = [
        _watch_rule("a", "t", _rule(("",), ("configmaps",), ops=frozenset({"CREATE"}))),
        _watch_rule("a", "t", _rule(("",), ("configmaps", "secrets"), ops=frozenset({"DELETE"}))),
        _watch_rule("a", "missing", _rule(("",), ("configmaps",))),
        _watch_rule("b", "t", _rule(("",), ("configmaps",))),  # its cluster has no catalog
    ]
    wanted = desired_watches(targets, rules, {"default": CATALOG})
    cm = WatchKey(GitTargetUid("uid-a"), "", "configmaps", "a")
    secret = WatchKey(GitTargetUid("uid-a"), "", "secrets", "a")
    assert set(wanted) == {cm, secret}
    assert wanted[cm].operations == {"CREATE", "DELETE"}
    assert wanted[secret].operations == {"DELETE"}
    assert (wanted[cm].branch, wanted[cm].prune, wanted[cm].cluster) == (
        "bk-uid-a",
        "Always",
        "default",
    )
    assert wanted[cm].target.name == "t"
    assert wanted[cm].key.group_resource == "/configmaps"


def test_rule_problems() -> None:
    rule = _watch_rule("a", "t", _rule(("",), ("configmaps", "widgets")))
    target = _target("a", "t", "uid").target
    assert rule_problems(rule, None, None, CATALOG)[0].reason == "GitTargetNotFound"
    cluster = Problem("NotAdmitted", "no")
    assert rule_problems(rule, target, cluster, CATALOG) == [cluster]
    pending = rule_problems(rule, target, None, None)
    assert (pending[0].reason, pending[0].permanent) == ("ClusterUnavailable", False)
    unresolved = rule_problems(rule, target, None, CATALOG)
    assert unresolved[0].reason == "UnresolvedResources"
    assert "core/preferred/widgets" in unresolved[0].message
    fine = _watch_rule("a", "t", _rule(("",), ("configmaps",)))
    assert rule_problems(fine, target, None, CATALOG) == []


def test_a_rule_ready_in_a_second_before_the_watcher_started_ran_before() -> None:
    """D2/M9: only a WatchRule Ready strictly before the watcher's start (at the one-second
    granularity conditions have) says its watches held cursors Redis may have lost."""
    started = "2026-12-02T10:00:05Z"

    def rule(*conditions: Condition) -> WatchRuleView:
        return WatchRuleView(Meta("team-a", "r", "uid-r", 1, "1"), "gt", (), conditions)

    ready = Condition("Ready", "True", "Resolved", last_transition_time="2026-12-02T10:00:04Z")
    assert ready_before(rule(ready), started)
    same_second = Condition("Ready", "True", "Resolved", last_transition_time=started)
    assert not ready_before(rule(same_second), started)
    not_ready = Condition("Ready", "False", "X", last_transition_time="2026-12-02T09:00:00Z")
    assert not ready_before(rule(not_ready), started)
    assert not ready_before(rule(), started)
    assert not ready_before(rule(Condition("Ready", "True", "Resolved")), started)
