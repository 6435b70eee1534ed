"""Conditions as kstatus reads them (issue 26 §4).

kstatus (sigs.k8s.io/cli-utils, "status" package) reads ``Stalled=True`` as "the controller
cannot make progress until the object is changed" and ``Reconciling=True`` as "in progress".
So a state that heals without a spec change (a referenced Secret or object created later, a
Git host back up) is ``Ready=False`` with ``Reconciling=True`` and ``Stalled=False``; a WatchRule
that selects Secrets its GitTarget cannot write is the WatchRule's problem, with the fix in its
message, and the GitTarget stays Ready while it mirrors the rest.
"""

from __future__ import annotations

import pytest

from shared.decide.conditions import Problem, trio
from shared.decide.targets import TargetFindings, Verdict, target_conditions
from shared.decide.watches import rule_problems
from shared.model.crds import GitTargetView, Meta, RuleView, WatchRuleView, parse_git_target
from shared.model.events import OPERATIONS
from shared.model.resources import ApiResource, Catalog

RW = frozenset({"get", "list", "watch"})
CATALOG = Catalog(
    versions={"": ("v1",), "example.com": ("v1",)},
    resources=(
        ApiResource("", "v1", "configmaps", "ConfigMap", True, RW),
        ApiResource("", "v1", "secrets", "Secret", True, RW),
        ApiResource("example.com", "v1", "vaults", "Vault", True, RW),
    ),
)


def _by_type(wanted: list) -> dict[str, tuple[str, str]]:  # type: ignore[type-arg]
    return {w.type: (w.status, w.reason) for w in wanted}


def _target(**spec: object) -> GitTargetView:
    return parse_git_target(
        {
            "metadata": {"namespace": "a", "name": "t", "uid": "u"},
            "spec": {"providerRef": {"name": "p"}, "branch": "main", "path": "x", **spec},
        }
    )


def _rule(*resources: str, groups: tuple[str, ...] = ("",)) -> WatchRuleView:
    entry = RuleView(groups, (), resources, frozenset(OPERATIONS))  # type: ignore[arg-type]
    return WatchRuleView(Meta("a", "r", "r1", 1, "1"), "t", (entry,))


@pytest.mark.parametrize(
    "reason",
    [
        "SecretNotFound",
        "ProviderNotFound",
        "ClusterProviderNotFound",
        "GitTargetNotFound",
        "ApplierNotFound",
        "SigningSecretNotFound",
    ],
)
def test_a_missing_referenced_object_is_reconciling_not_stalled(reason: str) -> None:
    """The object heals when what it names is created: in progress, not stalled."""
    found = _by_type(trio([Problem(reason, "x not found")]))
    assert found == {
        "Ready": ("False", reason),
        "Reconciling": ("True", reason),
        "Stalled": ("False", reason),
    }


def test_a_spec_problem_still_stalls() -> None:
    """A problem only a spec change mends (a branch outside allowedBranches) stalls, and wins
    over one that heals by itself."""
    problems = [Problem("SecretNotFound", "s"), Problem("BranchNotAllowed", "b")]
    found = _by_type(trio(problems))
    assert found["Stalled"] == ("True", "BranchNotAllowed")
    assert found["Ready"] == ("False", "BranchNotAllowed")


def test_a_git_target_whose_git_provider_is_missing_is_reconciling() -> None:
    findings = TargetFindings(
        verdict=Verdict("ProviderNotFound", "GitProvider a/p not found"),
        refusal=None,
        cluster_problem=None,
        provider_problems=(),
    )
    found = _by_type(target_conditions(findings))
    assert found["Validated"] == ("False", "ProviderNotFound")
    assert found["Stalled"][0] == "False"
    assert found["Reconciling"] == ("True", "ProviderNotFound")


def test_a_refused_secret_leaves_the_git_target_ready() -> None:
    """The branch worker refused a Secret (M10): GitPathAccepted says so, but the GitTarget
    mirrors the rest, so Ready stays True (the WatchRule carries the problem)."""
    refusal = {"reason": "SensitiveResource", "message": "Secret a/db is sensitive"}
    findings = TargetFindings(Verdict(), refusal, None, ())
    found = _by_type(target_conditions(findings))
    assert found["GitPathAccepted"] == ("False", "SensitiveResource")
    assert found["Ready"] == ("True", "Succeeded")
    assert found["Stalled"][0] == "False"


def test_another_refusal_still_fails_the_git_target() -> None:
    refusal = {"reason": "ForeignFile", "message": "x/a.yaml is not managed"}
    found = _by_type(target_conditions(TargetFindings(Verdict(), refusal, None, ())))
    assert found["Ready"] == ("False", "ForeignFile")


def test_a_rule_selecting_secrets_without_encryption_names_the_fix() -> None:
    problems = rule_problems(_rule("configmaps", "secrets"), _target(), None, CATALOG)
    assert [p.reason for p in problems] == ["SensitiveResource"]
    message = problems[0].message
    assert "add spec.encryption to the GitTarget or remove secrets from the rule" in message
    assert "GitTarget t" in message and "secrets" in message
    assert _by_type(trio(problems))["Ready"] == ("False", "SensitiveResource")


def test_a_wildcard_rule_selects_secrets_too() -> None:
    problems = rule_problems(_rule("*"), _target(), None, CATALOG)
    assert [p.reason for p in problems] == ["SensitiveResource"]


def test_a_rule_selecting_secrets_of_an_encrypting_target_is_ready() -> None:
    target = _target(encryption={"age": {"recipientsSecretRef": {"name": "keys"}}})
    assert rule_problems(_rule("configmaps", "secrets"), target, None, CATALOG) == []


def test_a_rule_selecting_a_kind_the_target_calls_sensitive_says_to_remove_it() -> None:
    target = _target(
        encryption={"age": {"recipientsSecretRef": {"name": "keys"}}},
        sensitive=[{"group": "example.com", "kind": "Vault"}],
    )
    problems = rule_problems(_rule("vaults", groups=("example.com",)), target, None, CATALOG)
    assert [p.reason for p in problems] == ["SensitiveResource"]
    assert "remove example.com/vaults from the rule" in problems[0].message
    assert "spec.encryption" not in problems[0].message
