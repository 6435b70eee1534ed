"""The Flux doubles' pure rules: wake predicates, managedFields cleanup, Go durations.

No servers: these pin the decision functions the controllers apply to every watch event and
every apply, on hand-made objects.
"""

from __future__ import annotations

from typing import Any

import pytest

from sandbox.flux import drift, durations
from sandbox.flux.triggers import ObjectKey, ObjectView, revision_wakes, view_of, wakes

pytestmark = pytest.mark.integration

KEY = ObjectKey("GitRepository", "default", "app")


def view(generation: int = 1, token: str | None = None) -> ObjectView:
    return ObjectView(KEY, generation, token)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (None, view(), True),  # a create always passes
        (view(1), view(2), True),  # new generation
        (view(1), view(1, "t1"), True),  # token appears
        (view(1, "t1"), view(1, "t2"), True),  # token changes
        (view(1, "t1"), view(1, "t1"), False),  # same token: a status or label edit
        (view(1, "t1"), view(1, None), False),  # token removed
    ],
)
def test_wake_predicate(old: ObjectView | None, new: ObjectView, expected: bool) -> None:
    """GenerationChanged OR ReconcileRequested.

    Fact: ../shared/facts/appliers.md F1 (fluxcd/pkg ``runtime/predicates/
    reconcile_requested.go``: passes when the new object has the annotation and the old one
    lacked it or had another value).
    """
    assert wakes(old, new) is expected


def kustomization(ready: bool, attempted: str) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "kind": "Kustomization",
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"sourceRef": {"kind": "GitRepository", "name": "app"}},
        "status": {"conditions": conditions, "lastAttemptedRevision": attempted},
    }


@pytest.mark.parametrize(
    ("ready", "attempted", "expected"),
    [
        (True, "main@sha1:aa", False),  # Ready and already attempted: skipped
        (True, "main@sha1:bb", True),
        (False, "main@sha1:aa", True),  # failed at that revision: retried
    ],
)
def test_revision_change_skip_rule(ready: bool, attempted: str, expected: bool) -> None:
    """A new source revision wakes a Kustomization unless Ready with that revision attempted.

    Fact: ../shared/facts/appliers.md F2 "What wakes Kustomizations"
    (``requestsForRevisionChangeOf``, kustomize-controller ``kustomization_indexers.go``).
    """
    ks = view_of(kustomization(ready, attempted))
    assert ks.source == KEY
    assert revision_wakes(ks, "main@sha1:aa") is expected


def entry(
    manager: str, operation: str, fields: dict[str, Any], subresource: str = ""
) -> dict[str, Any]:
    found = {
        "manager": manager,
        "operation": operation,
        "apiVersion": "v1",
        "time": "2024-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    return {**found, "subresource": subresource} if subresource else found


def test_cleanup_merges_kubectl_and_legacy_managers_into_the_apply_entry() -> None:
    """kubectl* (Apply, Update), before-first-apply and kustomize-controller Update entries of
    the main resource go to the kustomize-controller Apply entry; others are untouched.

    Fact: ../shared/facts/appliers.md F3 ``cleanupMetadata`` (fluxcd/pkg ``ssa/patch.go``
    ``patchReplaceFieldsManagers``: ``strings.HasPrefix`` on the name, same operation,
    ``Subresource == ""``; the field manager list in kustomize-controller ``apply()``).
    """
    entries = [
        entry("kustomize-controller", "Apply", {"f:data": {"f:a": {}}}),
        entry("kubectl-client-side-apply", "Update", {"f:data": {"f:b": {}}}),
        entry("kubectl", "Apply", {"f:data": {"f:c": {}}}),
        entry("before-first-apply", "Update", {"f:data": {"f:d": {}}}),
        entry("kustomize-controller", "Update", {"f:data": {"f:e": {}}}),
        entry("kubectl-edit", "Update", {"f:status": {}}, subresource="status"),
        entry("flux-client-side-apply", "Update", {"f:data": {"f:f": {}}}),
    ]
    merged = drift.merged_managed_fields(entries)
    assert merged is not None
    assert [(e["manager"], e["operation"]) for e in merged] == [
        ("kustomize-controller", "Apply"),
        ("kubectl-edit", "Update"),
        ("flux-client-side-apply", "Update"),
    ]
    assert merged[0]["fieldsV1"] == {"f:data": {f"f:{k}": {} for k in "abcde"}}
    assert drift.merged_managed_fields(entries[:1] + entries[5:]) is None


def test_cleanup_patch_removes_last_applied_and_respects_ssa_merge() -> None:
    """The JSON patch drops the last-applied annotation; ``ssa: Merge`` opts out entirely.

    Fact: ../shared/facts/appliers.md F3 ``cleanupMetadata`` (removes
    ``kubectl.kubernetes.io/last-applied-configuration``; skips objects annotated
    ``kustomize.toolkit.fluxcd.io/ssa: Merge``).
    """
    live = {
        "metadata": {
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            "managedFields": [],
        }
    }
    assert drift.cleanup_patch(live) == [
        {
            "op": "remove",
            "path": "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
        }
    ]
    live["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] = "merge"
    assert drift.cleanup_patch(live) == []


def test_drift_compares_labels_annotations_and_body_not_status_or_metadata() -> None:
    """Only labels, annotations and everything outside metadata/status count as drift.

    Fact: ../shared/facts/appliers.md F3 (drift = dry-run differs from live; fluxcd/pkg
    ``ssa`` ``hasDrifted``/``hasObjectDrifted``, read with the search tool).
    """
    live = {
        "metadata": {"labels": {"a": "1"}, "resourceVersion": "5"},
        "data": {"k": "v"},
        "status": {"x": 1},
    }
    same = {"metadata": {"labels": {"a": "1"}, "resourceVersion": "6"}, "data": {"k": "v"}}
    assert not drift.has_drifted(live, same)
    assert drift.has_drifted(live, {**same, "data": {"k": "w"}})
    assert drift.has_drifted(live, {**same, "metadata": {"labels": {"a": "2"}}})
    assert drift.has_drifted(None, same)


@pytest.mark.parametrize(
    ("text", "seconds", "printed"),
    [
        ("10m", 600, "10m0s"),
        ("1h30m", 5400, "1h30m0s"),
        ("90s", 90, "1m30s"),
        ("500ms", 0.5, "500ms"),
        ("2h", 7200, "2h0m0s"),
        ("30s", 30, "30s"),
    ],
)
def test_go_durations(text: str, seconds: float, printed: str) -> None:
    """``spec.interval`` strings parse to seconds and print as Go's ``Duration.String()``.

    Fact: the Flux CRDs' duration pattern ``^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$``
    (../shared/crds/fluxcd) and kustomize-controller's progress messages, which format
    ``GetTimeout().String()`` ("... with a timeout of 9m30s").
    """
    assert durations.parse(text) == seconds
    assert durations.format_go(seconds) == printed
    with pytest.raises(ValueError, match="invalid duration"):
        durations.parse("10 minutes")
