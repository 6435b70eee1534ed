"""T2: an applier in another namespace than its GitTarget is refused unless the applier's
ClusterProvider allows it (``spec.crossNamespaceAppliers``), case by case.

The rule is ``admission_problem``, which both ApplierConfigured (the watcher, S2) and the
dispatcher's re-read at every attempt (D2) apply, so a GitTarget that lost its allowance is
dropped from the request's reasons (``holders``).
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.decide.applier_check import (
    CROSS_NAMESPACE_APPLIER,
    Subject,
    admission,
    admission_problem,
)
from shared.decide.attempt import TargetFacts, holders
from shared.decide.selectors import allows_applier
from shared.model.config import ApplierRef
from shared.model.crds import AccessFrom, ApplierAllowance, parse_cluster_provider

KS = ApplierRef("Kustomization", "victim", "ks", "default")
APP = ApplierRef("Application", "argocd", "web", "default")


def _cluster(*allowances: dict[str, Any], access: Any = None) -> Any:
    spec: dict[str, Any] = {"accessFrom": access or {"selector": {}}}
    if allowances:
        spec["crossNamespaceAppliers"] = list(allowances)
    return parse_cluster_provider({"metadata": {"name": "default"}, "spec": spec})


def test_the_appliers_own_namespace_needs_no_allowance() -> None:
    own = ApplierRef("Kustomization", "team-a", "apps", "default")
    assert admission_problem(own, "team-a", _cluster(), {}) is None


def test_another_namespace_without_an_allowance_is_refused_with_how_to_allow_it() -> None:
    """The reliability probe's S2: zattacker names victim/ks; the ClusterProvider admits
    every namespace but allows no cross-namespace applier."""
    problem = admission_problem(KS, "zattacker", _cluster(), {})
    assert problem is not None and problem.reason == CROSS_NAMESPACE_APPLIER
    assert "Kustomization victim/ks is not in the GitTarget's namespace zattacker" in (
        problem.message
    )
    assert "ClusterProvider default" in problem.message
    assert "spec.crossNamespaceAppliers[] with namespace victim" in problem.message


@pytest.mark.parametrize(
    ("allowance", "labels", "allowed"),
    [
        ({"namespace": "argocd", "accessFrom": {"names": ["team-b"]}}, {}, True),
        ({"namespace": "argocd", "accessFrom": {"names": ["team-c"]}}, {}, False),
        ({"namespace": "flux-system", "accessFrom": {"selector": {}}}, {}, False),
        ({"namespace": "argocd", "accessFrom": {"selector": {}}}, {}, True),
        (
            {"namespace": "argocd", "accessFrom": {"selector": {"matchLabels": {"argo": "y"}}}},
            {"argo": "y"},
            True,
        ),
        (
            {"namespace": "argocd", "accessFrom": {"selector": {"matchLabels": {"argo": "y"}}}},
            {"argo": "n"},
            False,
        ),
        ({"namespace": "argocd", "accessFrom": {}}, {}, False),
        ({"namespace": "argocd"}, {}, False),
    ],
    ids=[
        "by-name",
        "another-name",
        "another-applier-namespace",
        "empty-selector-admits-all",
        "selector-matches",
        "selector-does-not-match",
        "empty-access-from-admits-none",
        "no-access-from-admits-none",
    ],
)
def test_an_allowance_admits_what_its_access_from_admits_for_its_namespace_only(
    allowance: dict[str, Any], labels: dict[str, str], allowed: bool
) -> None:
    """Each entry allows the appliers of one namespace, for the GitTarget namespaces its
    accessFrom admits, with accessFrom's own three shapes (absent or empty: none;
    ``selector: {}``: every namespace; names or a matching selector)."""
    problem = admission_problem(APP, "team-b", _cluster(allowance), labels)
    assert (problem is None) == allowed
    if not allowed:
        assert problem is not None and problem.reason == CROSS_NAMESPACE_APPLIER


def test_any_entry_is_enough() -> None:
    cluster = _cluster(
        {"namespace": "argocd", "accessFrom": {"names": ["team-x"]}},
        {"namespace": "argocd-2", "accessFrom": {"names": ["team-b"]}},
        {"namespace": "argocd", "accessFrom": {"names": ["team-b"]}},
    )
    assert admission_problem(APP, "team-b", cluster, {}) is None


def test_not_admitted_and_not_found_come_first() -> None:
    """An allowance never admits a namespace the ClusterProvider's accessFrom does not."""
    allowance = {"namespace": "argocd", "accessFrom": {"selector": {}}}
    closed = _cluster(allowance, access={"names": ["someone-else"]})
    problem = admission_problem(APP, "team-b", closed, {})
    assert problem is not None and problem.reason == "NotAdmitted"
    gone = admission_problem(APP, "team-b", None, {})
    assert gone is not None and gone.reason == "ClusterProviderNotFound"


def test_a_webhook_is_in_the_gittargets_namespace_by_construction() -> None:
    """``parse_applier`` gives a webhook the GitTarget's namespace: never cross-namespace."""
    webhook = ApplierRef("Webhook", "team-b", "hook", "default")
    assert admission_problem(webhook, "team-b", _cluster(), {}) is None


def test_the_condition_is_false_and_stalls() -> None:
    subject = Subject("zattacker", "https://git.example.com/r.git", "main", "clusters/z", KS)
    wanted = admission(subject, _cluster(), {})
    assert wanted is not None
    assert (wanted.type, wanted.status, wanted.reason) == (
        "ApplierConfigured",
        "False",
        CROSS_NAMESPACE_APPLIER,
    )


def test_parsing_keeps_each_entry_and_skips_one_without_a_namespace() -> None:
    cluster = _cluster(
        {"namespace": "argocd", "accessFrom": {"names": ["team-b"]}},
        {"accessFrom": {"selector": {}}},
        {"namespace": "flux-system"},
    )
    assert cluster.cross_namespace_appliers == (
        ApplierAllowance("argocd", AccessFrom(names=("team-b",))),
        ApplierAllowance("flux-system", None),
    )
    assert _cluster().cross_namespace_appliers == ()


def test_allows_applier_directly() -> None:
    allowance = ApplierAllowance("argocd", AccessFrom(names=("team-b",)))
    assert allows_applier([], "team-b", "team-b", {})
    assert allows_applier([allowance], "argocd", "team-b", {})
    assert not allows_applier([allowance], "argocd", "team-c", {})
    assert not allows_applier([], "argocd", "team-b", {})


def test_a_gittarget_that_lost_its_allowance_is_dropped_from_the_reasons() -> None:
    """D2 with T2: the dispatcher's ``admitted`` fact is ``admission_problem(...) is None``;
    a reason held only by a GitTarget that lost its allowance is not asked, and one still held
    by another GitTarget keeps only that one."""
    lost = admission_problem(KS, "zattacker", _cluster(), {}) is None
    own = admission_problem(KS, "victim", _cluster(), {}) is None
    facts = {
        "a": TargetFacts("a", True, True, True, lost, True),
        "v": TargetFacts("v", True, True, True, own, True),
    }
    result = holders({"ForeignCommit": ["a"], "Refusal": ["a", "v"]}, facts)
    assert result.kept == {"Refusal": ["v"]}
    assert result.dropped == ["ForeignCommit"]
