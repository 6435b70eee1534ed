"""A GitTarget's hand controls as the pure rules read them (P7, P8, P11).

- P7 ``spec.suspend``: Ready stays True with reason ``Suspended`` (a problem still wins), the
  config the branch workers read carries it, the GitTarget owes its applier nothing (left out
  of ``appliers_of``), and an attempt never counts it as holding a reason (D2).
- P8 the reconcile annotation: due while status does not show its value; a value too long for
  status fails only this GitTarget, with a condition.
- P11 ``onRefusal: PushEmptyCommit`` beside ``spec.applier`` is refused (the CRD's CEL rule
  again, for objects stored before it).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from shared.decide.attempt import TargetFacts, holders
from shared.decide.conditions import Problem
from shared.decide.targets import (
    INVALID_ON_REFUSAL,
    INVALID_RECONCILE_REQUEST,
    SUSPENDED,
    Surroundings,
    TargetFindings,
    Verdict,
    target_conditions,
    validate,
)
from shared.model.config import ApplierRef, appliers_of
from shared.model.crds import GitTargetView, parse_cluster_provider, parse_git_provider
from shared.model.crds import parse_git_target as parse
from shared.model.ids import GitTargetUid
from shared.model.target_controls import (
    MAX_RECONCILE_VALUE,
    RECONCILE_ANNOTATION,
    TargetControls,
    parse_controls,
)
from tests.configs import target_config

PROVIDER = parse_git_provider(
    {
        "metadata": {"namespace": "a", "name": "p"},
        "spec": {"url": "https://h/r.git", "allowedBranches": ["main"]},
    }
)
CLUSTER = parse_cluster_provider(
    {"metadata": {"name": "default"}, "spec": {"accessFrom": {"names": ["a"]}}}
)
AROUND = Surroundings(PROVIDER, CLUSTER, {})
KUSTOMIZATION = {"kustomizationRef": {"name": "apps", "namespace": "a"}}


def _target(spec: dict[str, Any] | None = None, **meta: Any) -> GitTargetView:
    return parse(
        {
            "metadata": {"namespace": "a", "name": "t", "uid": "u", **meta},
            "spec": {"providerRef": {"name": "p"}, "branch": "main", "path": "x", **(spec or {})},
        }
    )


def _ready(conditions: list[Any]) -> tuple[str, str]:
    ready = next(c for c in conditions if c.type == "Ready")
    return ready.status, ready.reason


def test_controls_are_read_from_spec_annotations_and_status() -> None:
    raw = {
        "metadata": {"annotations": {RECONCILE_ANNOTATION: "2026-12-06T09:00:00Z"}},
        "spec": {"suspend": True},
        "status": {
            "lastHandledReconcileAt": "2026-12-05T09:00:00Z",
            "remote": {"revision": "a" * 40, "verifiedBy": "Push"},
        },
    }
    controls = parse_controls(raw)
    assert controls.suspended
    assert (controls.reconcile_requested, controls.reconcile_handled) == (
        "2026-12-06T09:00:00Z",
        "2026-12-05T09:00:00Z",
    )
    assert controls.reconcile_due and controls.resync == "2026-12-06T09:00:00Z"
    assert controls.remote == {"revision": "a" * 40, "verifiedBy": "Push"}
    assert _target({"suspend": True}).controls.suspended


@pytest.mark.parametrize("value", ["true", 1, None])
def test_only_true_suspends(value: object) -> None:
    """A value that is not the boolean true (stored before the schema, say) suspends nothing."""
    assert not parse_controls({"spec": {"suspend": value}}).suspended


def test_a_handled_request_is_not_due() -> None:
    controls = TargetControls(reconcile_requested="r1", reconcile_handled="r1")
    assert not controls.reconcile_due and controls.resync == "r1"
    assert not TargetControls().reconcile_due and TargetControls().resync == ""


def test_a_too_long_request_is_not_handled_and_fails_only_its_target() -> None:
    """T4, P8: a value status cannot hold asks for no resync and shows why on this GitTarget."""
    controls = TargetControls(reconcile_requested="x" * (MAX_RECONCILE_VALUE + 1))
    assert controls.reconcile_problem and controls.resync == "" and not controls.reconcile_due
    found = TargetFindings(Verdict(), None, None, (), reconcile_problem=controls.reconcile_problem)
    assert _ready(target_conditions(found)) == ("False", INVALID_RECONCILE_REQUEST)
    assert not TargetControls(reconcile_requested="x" * MAX_RECONCILE_VALUE).reconcile_problem


def test_a_suspended_target_is_ready_with_reason_suspended() -> None:
    found = TargetFindings(Verdict(), None, None, (), suspended=True)
    conditions = target_conditions(found)
    assert _ready(conditions) == ("True", SUSPENDED)
    ready = next(c for c in conditions if c.type == "Ready")
    assert "spec.suspend" in ready.message
    assert {c.type: c.status for c in conditions}["Stalled"] == "False"


def test_a_problem_wins_over_suspended() -> None:
    """A suspended GitTarget with something wrong shows what is wrong."""
    found = TargetFindings(
        Verdict(), None, Problem("ClusterUnavailable", "down", permanent=False), (), suspended=True
    )
    assert _ready(target_conditions(found)) == ("False", "ClusterUnavailable")


def test_push_empty_commit_beside_an_applier_is_invalid() -> None:
    verdict = validate(_target({"onRefusal": "PushEmptyCommit", "applier": KUSTOMIZATION}), AROUND)
    assert verdict.reason == INVALID_ON_REFUSAL and "PushEmptyCommit" in verdict.message
    assert validate(_target({"onRefusal": "PushEmptyCommit"}), AROUND).valid
    target = _target({"onRefusal": "PushEmptyCommit"})
    assert target.on_refusal == "PushEmptyCommit"


def test_a_suspended_target_owes_its_applier_nothing() -> None:
    """P7: left out of the appliers the branch's obligations are kept for; an applier only a
    suspended GitTarget names is kept with none on request, so what it was owed is dropped."""
    ref = ApplierRef("Kustomization", "a", "apps", "default")
    url = "https://h/r"
    live = target_config(GitTargetUid("u1"), "a", "t1", url, "main", path="x", applier=ref)
    asleep = replace(
        target_config(GitTargetUid("u2"), "a", "t2", url, "main", path="y", applier=ref),
        suspended=True,
    )
    assert appliers_of([live, asleep]) == {ref: [live]}
    assert appliers_of([asleep]) == {}
    assert appliers_of([asleep], with_suspended=True) == {ref: []}


def test_an_attempt_never_counts_a_suspended_target_as_a_holder() -> None:
    """D2, P7: read again at the attempt, a suspended GitTarget holds no reason."""
    awake = TargetFacts("u1", True, True, True, True, True)
    asleep = TargetFacts("u2", True, True, True, True, True, suspended=True)
    found = holders({"ForeignCommit": ["u1", "u2"], "Refusal": ["u2"]}, {"u1": awake, "u2": asleep})
    assert found.kept == {"ForeignCommit": ["u1"]}
    assert found.dropped == ["Refusal"]
