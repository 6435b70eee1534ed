"""Our custom resources parsed with the CRD defaults re-applied (docs/crds.md tables:
commitWindow 5s, committer GitOps Reverser, clusterProviderRef default, prune OnEvent,
onRefusal None, operations absent = all)."""

from __future__ import annotations

from shared.model.config import ApplierRef
from shared.model.crds import (
    GitTargetView,
    parse_cluster_provider,
    parse_git_provider,
    parse_git_target,
    parse_watch_rule,
)


def test_git_provider_defaults_and_templates() -> None:
    bare = parse_git_provider(
        {"metadata": {"name": "p"}, "spec": {"url": "https://h/r", "allowedBranches": ["main"]}}
    )
    assert (bare.commit_window_s, bare.committer_name, bare.secret_name) == (
        5.0,
        "GitOps Reverser",
        "",
    )
    full = parse_git_provider(
        {
            "metadata": {"name": "p"},
            "spec": {
                "url": "https://h/r",
                "allowedBranches": ["*"],
                "secretRef": {"name": "s"},
                "push": {"commitWindow": "1m30s"},
                "commit": {
                    "committer": {"name": "Bot", "email": "b@x"},
                    "message": {"eventTemplate": "one", "groupTemplate": "many"},
                },
            },
        }
    )
    assert (full.commit_window_s, full.secret_name, full.committer_email) == (90.0, "s", "b@x")
    assert (full.message_one, full.message_many) == ("one", "many")


def test_git_target_defaults() -> None:
    target = parse_git_target(
        {
            "metadata": {"name": "t", "namespace": "a", "uid": "u", "generation": 3},
            "spec": {"providerRef": {"name": "p"}, "branch": "main", "path": "x"},
        }
    )
    assert (target.cluster_provider, target.prune, target.on_refusal) == (
        "default",
        "OnEvent",
        "None",
    )
    assert (target.uid, target.meta.generation) == ("u", 3)


def test_cluster_provider_access_shapes() -> None:
    closed = parse_cluster_provider({"metadata": {"name": "c"}, "spec": {}})
    assert closed.access_from is None and closed.kubeconfig_secret is None
    remote = parse_cluster_provider(
        {
            "metadata": {"name": "c"},
            "spec": {
                "kubeConfig": {"secretRef": {"name": "k", "key": "config"}},
                "accessFrom": {"names": ["a"]},
            },
        }
    )
    assert remote.kubeconfig_secret == ("k", "config")
    assert remote.access_from is not None and remote.access_from.selector is None


def test_watch_rule_operations() -> None:
    rule = parse_watch_rule(
        {
            "metadata": {"name": "r", "namespace": "a"},
            "spec": {
                "targetRef": {"name": "t"},
                "rules": [
                    {"apiGroups": [""], "resources": ["configmaps"]},
                    {"apiGroups": [""], "resources": ["secrets"], "operations": ["DELETE"]},
                    {"apiGroups": [""], "resources": ["x"], "operations": ["*"]},
                ],
            },
        }
    )
    assert [sorted(r.operations) for r in rule.rules] == [
        ["CREATE", "DELETE", "UPDATE"],
        ["DELETE"],
        ["CREATE", "DELETE", "UPDATE"],
    ]
    assert rule.target == "t"


def _target(applier: dict[str, object]) -> GitTargetView:
    return parse_git_target(
        {
            "metadata": {"name": "t", "namespace": "a"},
            "spec": {
                "providerRef": {"name": "p"},
                "branch": "main",
                "path": "x",
                "clusterProviderRef": {"name": "home"},
                "applier": applier,
            },
        }
    )


def _applier(applier: dict[str, object]) -> tuple[object, str]:
    target = _target(applier)
    return target.applier, target.applier_problem


def test_applier_reference_is_resolved_with_defaults() -> None:
    """behaviour.md §1 GitTarget spec.applier: clusterProviderRef omitted = the GitTarget's
    own; quietPeriod omitted = 30s."""
    ref, problem = _applier({"kustomizationRef": {"name": "apps", "namespace": "flux-system"}})
    assert problem == ""
    assert ref == ApplierRef("Kustomization", "flux-system", "apps", "home")
    ref, _ = _applier(
        {
            "applicationRef": {"name": "web", "namespace": "argocd"},
            "clusterProviderRef": {"name": "hub"},
        }
    )
    assert ref == ApplierRef("Application", "argocd", "web", "hub")
    kustomization = {"kustomizationRef": {"name": "a", "namespace": "b"}}
    assert _target(kustomization).quiet_period_s == 30.0
    assert _target({**kustomization, "quietPeriod": "1m"}).quiet_period_s == 60.0


def test_applier_rules_of_the_crd_are_checked_again() -> None:
    """behaviour.md §1: exactly one of kustomizationRef and applicationRef (CEL in the CRD,
    and checked again by the product); quietPeriod is refused with applicationRef."""
    both = {
        "kustomizationRef": {"name": "a", "namespace": "b"},
        "applicationRef": {"name": "a", "namespace": "b"},
    }
    assert _applier(both) == (
        None,
        "spec.applier must name exactly one of kustomizationRef, applicationRef and webhook",
    )
    quiet_app = {"applicationRef": {"name": "a", "namespace": "b"}, "quietPeriod": "5s"}
    ref, problem = _applier(quiet_app)
    assert ref is None and "quietPeriod" in problem
