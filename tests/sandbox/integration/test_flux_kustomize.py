"""The kustomize-controller double: wakes, revisions, status order, suspend, failures.

Driven deterministically with ``reconcile_due()`` and an injected clock. The apply itself
(field manager, force, drift, cleanup, prune) is pinned in ``test_flux_apply.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import watch

from sandbox.flux.activity import (
    APPLIED,
    FAILED,
    FETCHED,
    GIT_REPOSITORY,
    KUSTOMIZATION,
    SUSPENDED,
    UP_TO_DATE,
)
from tests.sandbox.integration.flux_support import (
    KUSTOMIZE,
    NAMESPACE,
    SOURCE,
    FakeClock,
    FluxEnv,
    config_map,
    open_env,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path, clock: FakeClock) -> Iterator[FluxEnv]:
    yield from open_env(tmp_path, clock=clock)


@pytest.fixture
def applied(env: FluxEnv) -> str:
    """Both objects created and reconciled once; the applied revision."""
    env.create_source()
    env.create_kustomization()
    records = env.flux.reconcile_due()
    revision = f"main@sha1:{env.head()}"
    assert [(r.kind, r.action, r.revision) for r in records] == [
        (GIT_REPOSITORY, FETCHED, revision),
        (KUSTOMIZATION, APPLIED, revision),
    ]
    return revision


def summary(records: list[Any]) -> list[tuple[str, str, str]]:
    return [(r.kind, r.action, r.revision) for r in records]


def ready(obj: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def test_new_revision_wakes_the_kustomization(env: FluxEnv, applied: str) -> None:
    """A fetched new revision wakes the Kustomization, which applies it and reports it.

    Facts: ../shared/facts/appliers.md F2 "What wakes Kustomizations"
    (``SourceRevisionChangePredicate``, kustomize-controller
    ``internal/controller/source_predicate.go``) and F3 (status: ``lastAppliedRevision``,
    Ready True ``ReconciliationSucceeded`` "Applied revision: <rev>", ``observedGeneration``,
    no ``Reconciling`` once Ready; ``inventory.entries`` ids ``<ns>_<name>_<group>_<kind>``).
    """
    new = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.request(SOURCE, "fetch-now")
    revision = f"main@sha1:{new}"
    assert summary(env.flux.reconcile_due()) == [
        (GIT_REPOSITORY, FETCHED, revision),
        (KUSTOMIZATION, APPLIED, revision),
    ]
    assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {"color": "green"}
    status = env.get(KUSTOMIZE)["status"]
    assert status["lastAppliedRevision"] == status["lastAttemptedRevision"] == revision
    assert (ready(env.get(KUSTOMIZE))["reason"], ready(env.get(KUSTOMIZE))["message"]) == (
        "ReconciliationSucceeded",
        f"Applied revision: {revision}",
    )
    assert status["observedGeneration"] == 1
    assert "Reconciling" not in [c["type"] for c in status["conditions"]]
    assert status["inventory"] == {"entries": [{"id": "default_app__ConfigMap", "v": "v1"}]}


def test_unchanged_revision_does_not_wake_the_kustomization(env: FluxEnv, applied: str) -> None:
    """A source reconcile that ends at the same revision wakes no Kustomization.

    Fact: ../shared/facts/appliers.md F2: the predicate fires only when the revision is not
    the old one, and ``requestsForRevisionChangeOf`` skips a Ready Kustomization whose
    ``lastAttemptedRevision`` equals it ("an unchanged revision triggers nothing").
    """
    env.request(SOURCE, "same-head")
    assert summary(env.flux.reconcile_due()) == [(GIT_REPOSITORY, UP_TO_DATE, applied)]


def test_attempted_is_written_before_the_apply_and_applied_after(
    env: FluxEnv, applied: str
) -> None:
    """Watching the Kustomization shows lastAttemptedRevision first, then the apply, then
    lastAppliedRevision.

    Fact: ../shared/facts/appliers.md F3: ``lastAttemptedRevision`` is set once the artifact
    is downloaded and the path exists, *before* build and apply (kustomize-controller
    ``reconcile()`` patches it with "Building manifests ..."); ``lastAppliedRevision`` after.
    The API double's resourceVersion is one increasing counter, so the ConfigMap's version
    orders the apply between the two status writes. The Reconciling messages walk through
    "Fetching manifests...", "Building manifests...", "Detecting drift for revision ... with
    a timeout of ..." (F3; ``GetTimeout()`` = interval 60m - 30s).
    """
    start = env.get(KUSTOMIZE)["metadata"]["resourceVersion"]
    new = f"main@sha1:{env.work.push({'deploy/app.yaml': config_map('app', {'color': 'red'})})}"
    env.request(SOURCE, "go")
    env.flux.reconcile_due()
    states, messages = [], []
    stream = watch.Watch()
    for event in stream.stream(
        env.custom.list_namespaced_custom_object,
        *KUSTOMIZE[:2],
        NAMESPACE,
        KUSTOMIZE[2],
        resource_version=start,
        timeout_seconds=5,
    ):
        status = event["raw_object"].get("status", {})
        rv = int(event["raw_object"]["metadata"]["resourceVersion"])
        states.append((status.get("lastAttemptedRevision"), status.get("lastAppliedRevision"), rv))
        messages += [
            c["message"]
            for c in status.get("conditions", [])
            if c["type"] == "Reconciling" and c["message"] not in messages
        ]
        if status.get("lastAppliedRevision") == new:
            stream.stop()
    attempted = next(rv for a, b, rv in states if a == new and b == applied)
    done = next(rv for a, b, rv in states if a == new and b == new)
    cm_rv = int(env.core.read_namespaced_config_map("app", NAMESPACE).metadata.resource_version)
    assert attempted < cm_rv < done
    assert messages == [
        f"{step} for revision {new} with a timeout of 59m30s"
        for step in ("Fetching manifests", "Building manifests", "Detecting drift")
    ]


def test_requested_at_reapplies_the_same_revision(env: FluxEnv, applied: str) -> None:
    """A new token on the Kustomization reconciles it at the unchanged revision.

    Facts: ../shared/facts/appliers.md F1 (a new requestedAt wakes it; the token lands in
    ``lastHandledReconcileAt`` in ``finalizeStatus``) and F3 ("Does it apply on every
    reconcile even without a new revision? Yes"; it applies the source's current artifact).
    """
    env.request(KUSTOMIZE, "2024-01-29 17:22:23.186705496 +0000 UTC m=+1.0")
    assert summary(env.flux.reconcile_due()) == [(KUSTOMIZATION, APPLIED, applied)]
    status = env.get(KUSTOMIZE)["status"]
    assert status["lastHandledReconcileAt"] == "2024-01-29 17:22:23.186705496 +0000 UTC m=+1.0"
    assert status["lastAppliedRevision"] == applied


def test_spec_change_reconciles_the_kustomization(env: FluxEnv, applied: str) -> None:
    """A spec edit (a new generation) reconciles at once and moves observedGeneration.

    Fact: ../shared/facts/appliers.md F1 (``GenerationChangedPredicate`` in ``ksPredicate``,
    kustomize-controller ``internal/controller/kustomization_manager.go``) and F3
    (``observedGeneration`` updated when Ready=True).
    """
    env.patch(KUSTOMIZE, {"spec": {"interval": "30m"}})
    assert summary(env.flux.reconcile_due()) == [(KUSTOMIZATION, APPLIED, applied)]
    obj = env.get(KUSTOMIZE)
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"] == 2


def test_interval_reapplies_and_corrects_drift(
    env: FluxEnv, clock: FakeClock, applied: str
) -> None:
    """After ``spec.interval`` the Kustomization re-applies its revision and undoes an edit.

    Fact: ../shared/facts/appliers.md F3 §Interval ("the interval at which the Kustomization
    is reconciled ..., correcting any existing drift in the process").
    """
    env.patch(KUSTOMIZE, {"spec": {"interval": "10m"}})
    env.flux.reconcile_due()
    env.core.patch_namespaced_config_map(
        "app", NAMESPACE, {"data": {"color": "pink"}}, field_manager="someone-else"
    )
    clock.advance(9 * 60)
    assert env.flux.reconcile_due() == []
    clock.advance(60)
    records = env.flux.reconcile_due()
    assert summary(records) == [(KUSTOMIZATION, APPLIED, applied)]
    assert records[0].changes == ("ConfigMap/default/app configured",)
    assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {"color": "blue"}


def test_suspended_kustomization_applies_nothing_but_handles_the_token(
    env: FluxEnv, clock: FakeClock, applied: str
) -> None:
    """Suspended: a new revision is not applied; a token still reaches lastHandledReconcileAt.

    Facts: ../shared/facts/appliers.md F3 §Suspend ("new Source revisions are not applied";
    reconcile returns early) and F1's note: ``finalizeStatus`` runs before the suspend check,
    so a suspended Kustomization copies the token without applying.
    """
    env.patch(KUSTOMIZE, {"spec": {"suspend": True}})
    assert summary(env.flux.reconcile_due()) == [(KUSTOMIZATION, SUSPENDED, "")]
    new = f"main@sha1:{env.work.push({'deploy/app.yaml': config_map('app', {'color': 'red'})})}"
    env.request(SOURCE, "fetch")
    env.request(KUSTOMIZE, "while-suspended")
    records = summary(env.flux.reconcile_due())  # woken by the token and by the new revision
    assert records[0] == (GIT_REPOSITORY, FETCHED, new)
    assert set(records[1:]) == {(KUSTOMIZATION, SUSPENDED, "")}
    clock.advance(2 * 3600)
    assert [r.kind for r in env.flux.reconcile_due()] == [GIT_REPOSITORY]
    status = env.get(KUSTOMIZE)["status"]
    assert status["lastHandledReconcileAt"] == "while-suspended"
    assert status["lastAppliedRevision"] == applied
    assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {"color": "blue"}
    env.patch(KUSTOMIZE, {"spec": {"suspend": False}})
    assert summary(env.flux.reconcile_due()) == [(KUSTOMIZATION, APPLIED, new)]


def test_missing_source_is_artifact_failed(env: FluxEnv, clock: FakeClock) -> None:
    """A Kustomization whose GitRepository does not exist: Ready False ``ArtifactFailed``.

    Fact: kustomize-controller ``internal/controller/kustomization_controller.go``
    ``Reconcile`` (read with the search tool): "Source '<kind>/<ns>/<name>' not found",
    requeued after ``retryInterval``; reasons per ../shared/facts/appliers.md F3.
    """
    env.create_kustomization(source="missing", retryInterval="1m")
    assert [r.action for r in env.flux.reconcile_due()] == [FAILED]
    condition = ready(env.get(KUSTOMIZE))
    assert (condition["status"], condition["reason"]) == ("False", "ArtifactFailed")
    assert condition["message"] == "Source 'GitRepository/default/missing' not found"
    clock.advance(60)
    assert [r.action for r in env.flux.reconcile_due()] == [FAILED]


def test_missing_path_is_artifact_failed(env: FluxEnv, applied: str) -> None:
    """A ``spec.path`` absent from the artifact: ArtifactFailed, nothing attempted.

    Fact: ../shared/facts/appliers.md F3: ``lastAttemptedRevision`` is set only once the path
    exists; kustomize-controller ``reconcile()`` fails with "kustomization path not found".
    """
    env.patch(KUSTOMIZE, {"spec": {"path": "./nowhere"}})
    assert [r.action for r in env.flux.reconcile_due()] == [FAILED]
    obj = env.get(KUSTOMIZE)
    assert ready(obj)["reason"] == "ArtifactFailed"
    assert ready(obj)["message"].startswith("kustomization path not found")
    reconciling = next(c for c in obj["status"]["conditions"] if c["type"] == "Reconciling")
    assert reconciling["reason"] == "ProgressingWithRetry"
    assert obj["status"]["observedGeneration"] == 1  # only moves when Ready=True
