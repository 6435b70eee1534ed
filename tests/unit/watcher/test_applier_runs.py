"""How the watcher runs applier checks and shows the ledger (S2 deadline, S3, O6), no I/O.

The check runner's deadline, which GitTargets are checked at all, what the trio makes of an
Unknown check, and the shape of ``status.applier`` against the GitTarget CRD.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from services.watcher.applier_status import applier_status
from services.watcher.appliers import ApplierChecker, ApplierWorld, CheckJob, plan_check
from services.watcher.clusters import ClusterState
from shared.decide.applier_check import Subject, configured
from shared.decide.conditions import Wanted
from shared.decide.targets import TargetFindings, Verdict, target_conditions
from shared.model.config import ApplierRef
from shared.model.crds import Condition, GitTargetView, parse_cluster_provider, parse_git_target
from shared.model.ledger import LastRequest
from shared.settings import Settings, SettingsError

REF = ApplierRef("Kustomization", "flux-system", "apps", "default")


@pytest.fixture
def release() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # let a check held by a test end, so no thread outlives it


def _job() -> CheckJob:
    return CheckJob(Subject("team-a", "https://h/r", "main", "x", REF), client=None)  # type: ignore[arg-type]


def test_a_check_that_overruns_its_deadline_is_unknown_check_timed_out(
    release: threading.Event,
) -> None:
    """S2: checks run under a deadline; an overrun reports Unknown/CheckTimedOut while the
    other checks of the pass still report their verdict."""
    started = threading.Event()

    def check(job: CheckJob) -> Wanted:
        if job.subject.path == "slow":
            started.set()
            release.wait(10)
        return configured(job.subject)

    checker = ApplierChecker(0.2, check)
    slow = CheckJob(Subject("team-a", "https://h/r", "main", "slow", REF), client=None)  # type: ignore[arg-type]
    try:
        results = checker.run({"slow": slow, "fast": _job()})
    finally:
        checker.close()
    assert started.is_set()
    assert (results["slow"].status, results["slow"].reason) == ("Unknown", "CheckTimedOut")
    assert results["fast"].reason == "Configured"


def _target(applier: dict[str, Any] | None) -> GitTargetView:
    spec: dict[str, Any] = {"providerRef": {"name": "repo"}, "branch": "main", "path": "x"}
    if applier is not None:
        spec["applier"] = applier
    return parse_git_target(
        {"metadata": {"namespace": "team-a", "name": "t", "uid": "u"}, "spec": spec}
    )


WORLD = ApplierWorld(
    clusters={
        "default": parse_cluster_provider(
            {
                "metadata": {"name": "default"},
                "spec": {
                    "accessFrom": {"names": ["team-a"]},
                    "crossNamespaceAppliers": [
                        {"namespace": "flux-system", "accessFrom": {"names": ["team-a"]}}
                    ],
                },
            }
        ),
        "closed": parse_cluster_provider({"metadata": {"name": "closed"}, "spec": {}}),
        "strict": parse_cluster_provider(
            {"metadata": {"name": "strict"}, "spec": {"accessFrom": {"names": ["team-a"]}}}
        ),
    },
    cluster_states={"default": ClusterState(None, None, None)},
    namespace_labels={},
)
KS = {"kustomizationRef": {"name": "apps", "namespace": "flux-system"}}


def test_what_is_checked_and_what_is_decided_without_reading() -> None:
    """S2: only a GitTarget with spec.applier has the condition; a broken spec.applier is
    False/InvalidApplier (the CRD's CEL rule again); a target that is not valid is not
    checked; a ClusterProvider that does not admit the namespace is NotAdmitted, and one
    that does not allow an applier in another namespace is CrossNamespaceApplier (T2), both
    before anything is read through it; an unreachable applier cluster is Unknown."""
    assert plan_check(_target(None), Verdict(), "https://h/r", WORLD) is None
    both = {**KS, "applicationRef": {"name": "a", "namespace": "b"}}
    invalid = plan_check(_target(both), Verdict("InvalidApplier", "x"), "https://h/r", WORLD)
    assert isinstance(invalid, Wanted) and (invalid.status, invalid.reason) == (
        "False",
        "InvalidApplier",
    )
    unchecked = plan_check(_target(KS), Verdict("ProviderNotFound", "x"), None, WORLD)
    assert isinstance(unchecked, Wanted) and (unchecked.status, unchecked.reason) == (
        "Unknown",
        "NotChecked",
    )
    closed = plan_check(
        _target({**KS, "clusterProviderRef": {"name": "closed"}}), Verdict(), "u", WORLD
    )
    assert isinstance(closed, Wanted) and closed.reason == "NotAdmitted"
    strict = plan_check(
        _target({**KS, "clusterProviderRef": {"name": "strict"}}), Verdict(), "u", WORLD
    )
    assert isinstance(strict, Wanted) and (strict.status, strict.reason) == (
        "False",
        "CrossNamespaceApplier",
    )
    unreachable = plan_check(_target(KS), Verdict(), "https://h/r", WORLD)
    assert isinstance(unreachable, Wanted) and (unreachable.status, unreachable.reason) == (
        "Unknown",
        "CheckFailed",
    )


def test_an_applier_configuration_error_stalls_and_an_unknown_check_keeps_reconciling() -> None:
    """S2: a configuration error stalls the GitTarget with the same reason; a check that
    reached no verdict is expected to heal, so the GitTarget stays Reconciling."""

    def trio(applier: Condition) -> dict[str, tuple[str, str]]:
        found = TargetFindings(Verdict(), None, None, (), applier)
        return {w.type: (w.status, w.reason) for w in target_conditions(found)}

    stalled = trio(Condition("ApplierConfigured", "False", "SourceMismatch", "m"))
    assert stalled["Stalled"] == ("True", "SourceMismatch")
    assert stalled["Ready"] == ("False", "SourceMismatch")
    waiting = trio(Condition("ApplierConfigured", "Unknown", "CheckTimedOut", "m"))
    assert waiting["Reconciling"] == ("True", "CheckTimedOut")
    assert waiting["Stalled"][0] == "False"
    assert trio(Condition("ApplierConfigured", "True", "Configured", ""))["Ready"][0] == "True"


def test_status_applier_names_the_resolved_applier_and_the_last_request() -> None:
    """S3 and the GitTarget CRD's status.applier: kind, name, namespace, clusterProvider, and
    the ledger entry as lastRequest when a request was made (its shape: tests/unit/model)."""
    assert applier_status(REF, None) == {
        "kind": "Kustomization",
        "name": "apps",
        "namespace": "flux-system",
        "clusterProvider": "default",
    }
    entry = LastRequest("t-1", "a" * 40, ("CatchUp",), 1_900_000_000, 1_900_000_005, "Delivered")
    shown = applier_status(REF, entry)
    assert shown["lastRequest"] == entry.to_status()
    assert shown["lastRequest"]["token"] == "t-1"


def test_applier_settings_have_documented_defaults_and_read_the_environment() -> None:
    """The check's deadline (10s), the shortest source interval (1h) and the light pass's
    period (2s) are settings (docs/flux.md); a zero deadline or period is refused."""
    defaults = Settings.from_env({})
    assert defaults.applier_check_deadline == timedelta(seconds=10)
    assert defaults.min_source_interval == timedelta(hours=1)
    assert defaults.applier_status_period == timedelta(seconds=2)
    env = {
        "GITOPS_REVERSER_APPLIER_CHECK_DEADLINE": "3s",
        "GITOPS_REVERSER_MIN_SOURCE_INTERVAL": "30m",
        "GITOPS_REVERSER_APPLIER_STATUS_PERIOD": "500ms",
    }
    custom = Settings.from_env(env)
    assert custom.applier_check_deadline == timedelta(seconds=3)
    assert custom.min_source_interval == timedelta(minutes=30)
    assert custom.applier_status_period == timedelta(milliseconds=500)
    with pytest.raises(SettingsError):
        Settings.from_env({"GITOPS_REVERSER_APPLIER_STATUS_PERIOD": "0s"})
