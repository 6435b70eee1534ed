"""GitTarget validation and conditions (behaviour.md §1 GitTarget: branch matches
allowedBranches, path relative without ``..``, ClusterProvider admits the namespace; M10:
GitPathAccepted=False while a refusal stands)."""

from __future__ import annotations

import pytest

from shared.decide.conditions import Problem
from shared.decide.targets import (
    Surroundings,
    TargetFindings,
    Verdict,
    path_problem,
    target_conditions,
    validate,
)
from shared.model.crds import (
    AccessFrom,
    Condition,
    GitTargetView,
    LabelSelector,
    parse_cluster_provider,
    parse_git_provider,
    parse_git_target,
)

PROVIDER = parse_git_provider(
    {
        "metadata": {"namespace": "a", "name": "p"},
        "spec": {"url": "https://h/r.git", "allowedBranches": ["main"]},
    }
)
CLUSTER = parse_cluster_provider(
    {"metadata": {"name": "default"}, "spec": {"accessFrom": {"names": ["a"]}}}
)


def _target(branch: str = "main", path: str = "x/y") -> GitTargetView:
    return parse_git_target(
        {
            "metadata": {"namespace": "a", "name": "t", "uid": "u"},
            "spec": {"providerRef": {"name": "p"}, "branch": branch, "path": path},
        }
    )


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        (".", True),
        ("clusters/prod", True),
        ("a/..b", True),
        ("", False),
        ("/abs", False),
        ("a/../b", False),
        ("..", False),
        ("a/.git/b", False),
        (" a", False),
        ("a\\b", False),
    ],
)
def test_path_problem(path: str, ok: bool) -> None:
    assert (path_problem(path) == "") is ok


def test_checks_run_in_order_and_name_the_first_failure() -> None:
    around = Surroundings(PROVIDER, CLUSTER, {})
    assert validate(_target(), around).valid
    assert validate(_target(), Surroundings(None, CLUSTER, {})).reason == ("ProviderNotFound")
    assert validate(_target("dev", "/x"), around).reason == "BranchNotAllowed"
    assert validate(_target(path="../x"), around).reason == "InvalidPath"
    assert validate(_target(), Surroundings(PROVIDER, None, {})).reason == (
        "ClusterProviderNotFound"
    )
    bad_applier = parse_git_target(
        {
            "metadata": {"namespace": "a", "name": "t"},
            "spec": {
                "providerRef": {"name": "p"},
                "branch": "main",
                "path": "x",
                "applier": {
                    "kustomizationRef": {"name": "k", "namespace": "f"},
                    "applicationRef": {"name": "k", "namespace": "f"},
                },
            },
        }
    )
    assert validate(bad_applier, around).reason == "InvalidApplier"
    closed = parse_cluster_provider({"metadata": {"name": "default"}, "spec": {}})
    assert validate(_target(), Surroundings(PROVIDER, closed, {})).reason == "NotAdmitted"


def _by_type(found: TargetFindings) -> dict[str, tuple[str, str]]:
    return {w.type: (w.status, w.reason) for w in target_conditions(found)}


def test_a_valid_target_is_ready() -> None:
    assert _by_type(TargetFindings(Verdict(), None, None, ())) == {
        "Validated": ("True", "Succeeded"),
        "GitPathAccepted": ("True", "Accepted"),
        "Ready": ("True", "Succeeded"),
        "Reconciling": ("False", "Succeeded"),
        "Stalled": ("False", "Succeeded"),
    }


def test_a_refusal_stalls_with_its_reason_and_a_bad_reason_is_replaced() -> None:
    found = TargetFindings(Verdict(), {"reason": "ForeignFile", "message": "m"}, None, ())
    assert _by_type(found)["GitPathAccepted"] == ("False", "ForeignFile")
    assert _by_type(found)["Stalled"] == ("True", "ForeignFile")
    odd = TargetFindings(Verdict(), {"reason": "not a reason!", "message": "m"}, None, ())
    assert _by_type(odd)["GitPathAccepted"] == ("False", "Refused")


def test_dependencies_not_ready_keep_it_reconciling() -> None:
    found = TargetFindings(Verdict(), None, None, (Problem("SecretNotFound", "gone"),))
    conditions = _by_type(found)
    assert conditions["Ready"] == ("False", "GitProviderNotReady")
    assert conditions["Reconciling"] == ("True", "GitProviderNotReady")
    invalid = TargetFindings(
        Verdict("BranchNotAllowed", "no"), None, None, (Problem("SecretNotFound", "gone"),)
    )
    assert _by_type(invalid)["Ready"] == ("False", "BranchNotAllowed")


def test_applier_configured_false_stalls_the_target() -> None:
    applier = Condition("ApplierConfigured", "False", "SourceMismatch", "wrong branch")
    found = TargetFindings(Verdict(), None, None, (), applier)
    assert _by_type(found)["Stalled"] == ("True", "SourceMismatch")


def test_selector_admission_uses_namespace_labels() -> None:
    cluster = parse_cluster_provider(
        {"metadata": {"name": "default"}, "spec": {"accessFrom": {"selector": {}}}}
    )
    assert cluster.access_from == AccessFrom(selector=LabelSelector())
    assert validate(_target(), Surroundings(PROVIDER, cluster, {})).valid
