"""The kustomize-controller double's server-side apply: manager, force, drift, cleanup, prune.

Every object goes through the sandbox API server with the official client, so the
managedFields checked here are the ones the API double recorded for the double's requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.flux.activity import APPLIED, KUSTOMIZATION
from tests.sandbox.integration.flux_support import (
    KUSTOMIZE,
    NAMESPACE,
    FakeClock,
    FluxEnv,
    config_map,
    open_env,
)

pytestmark = pytest.mark.integration

TWO_MAPS = {
    "deploy/app.yaml": config_map("app", {"color": "blue"}),
    "deploy/other.yaml": config_map("other", {"size": "small"}),
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[FluxEnv]:
    yield from open_env(tmp_path, clock=FakeClock(), files=TWO_MAPS)


def reconcile(env: FluxEnv, token: str) -> tuple[str, ...]:
    """Ask the Kustomization to reconcile; the changes of its apply."""
    env.request(KUSTOMIZE, token)
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert [r.action for r in records] == [APPLIED], records
    return records[0].changes


def start(env: FluxEnv, **spec: Any) -> tuple[str, ...]:
    env.create_source()
    env.create_kustomization(**spec)
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert [r.action for r in records] == [APPLIED]
    return records[0].changes


def managers(name: str, env: FluxEnv) -> dict[tuple[str, str], dict[str, Any]]:
    cm = env.core.read_namespaced_config_map(name, NAMESPACE)
    return {(m.manager, m.operation): m.fields_v1 for m in cm.metadata.managed_fields}


def test_apply_uses_manager_kustomize_controller_and_owner_labels(env: FluxEnv) -> None:
    """Objects are server-side applied by ``kustomize-controller`` with the owner labels.

    Fact: ../shared/facts/appliers.md F3 "Field manager and managedFields": one entry
    ``manager: kustomize-controller``, ``operation: Apply`` owning the Git fields and the labels
    ``kustomize.toolkit.fluxcd.io/name`` / ``namespace`` (fluxcd/pkg ``ssa/manager.go``
    ``SetOwnerLabels``).
    """
    assert start(env) == ("ConfigMap/default/app created", "ConfigMap/default/other created")
    cm = env.core.read_namespaced_config_map("app", NAMESPACE)
    assert cm.metadata.labels == {
        "kustomize.toolkit.fluxcd.io/name": "app",
        "kustomize.toolkit.fluxcd.io/namespace": "default",
    }
    fields = managers("app", env)
    assert list(fields) == [("kustomize-controller", "Apply")]
    owned = fields[("kustomize-controller", "Apply")]
    assert "f:color" in owned["f:data"]
    assert "f:kustomize.toolkit.fluxcd.io/name" in owned["f:metadata"]["f:labels"]


def test_force_takes_over_a_field_another_manager_owns(env: FluxEnv) -> None:
    """A field applied by another manager with a different value is taken over (force).

    Fact: ../shared/facts/appliers.md F3: applies are ``Patch(..., client.Apply,
    client.ForceOwnership, client.FieldOwner("kustomize-controller"))``, server-side apply
    with force-conflicts (fluxcd/pkg ``ssa/manager_apply.go``). Without force the API server
    would answer 409 (shown first).
    """
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "app", "namespace": NAMESPACE},
        "data": {"color": "red"},
    }
    env.core.patch_namespaced_config_map(
        "app",
        NAMESPACE,
        body,
        field_manager="other-applier",
        _content_type="application/apply-patch+yaml",
    )
    with pytest.raises(ApiException) as conflict:
        env.core.patch_namespaced_config_map(
            "app",
            NAMESPACE,
            {**body, "data": {"color": "blue"}},
            field_manager="kustomize-controller",
            _content_type="application/apply-patch+yaml",
        )
    assert conflict.value.status == 409
    assert start(env)[0] == "ConfigMap/default/app configured"
    assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {"color": "blue"}
    fields = managers("app", env)
    assert "f:color" in fields[("kustomize-controller", "Apply")]["f:data"]
    assert "f:data" not in (fields.get(("other-applier", "Apply")) or {})


def test_drift_by_another_manager_is_reverted_and_its_own_fields_survive(env: FluxEnv) -> None:
    """A new token re-applies: a Git field edited by another manager is reverted, a field
    that manager added survives, and the untouched object keeps its resourceVersion.

    Facts: ../shared/facts/appliers.md F3: every reconcile applies the current artifact; only
    drifted objects are applied ("Do not apply objects that have not drifted to avoid
    bumping the resource version"); fields added by a manager other than ``kubectl*`` survive
    unless they conflict with Git.
    """
    start(env)
    other_rv = env.core.read_namespaced_config_map("other", NAMESPACE).metadata.resource_version
    env.core.patch_namespaced_config_map(
        "app", NAMESPACE, {"data": {"color": "pink", "extra": "mine"}}, field_manager="hpa-like"
    )
    assert reconcile(env, "revert") == ("ConfigMap/default/app configured",)
    assert env.core.read_namespaced_config_map("app", NAMESPACE).data == {
        "color": "blue",
        "extra": "mine",
    }
    after = env.core.read_namespaced_config_map("other", NAMESPACE).metadata.resource_version
    assert after == other_rv
    assert reconcile(env, "again") == ()


def test_fields_added_with_kubectl_are_removed(env: FluxEnv) -> None:
    """Fields set by a ``kubectl*`` manager are handed to kustomize-controller and dropped.

    Fact: ../shared/facts/appliers.md F3 ``cleanupMetadata``: managedFields entries of
    managers starting with ``kubectl`` (Apply and Update) are merged into the
    ``kustomize-controller`` Apply entry, so "fields added by ``kubectl edit``, ``kubectl
    patch`` or ``kubectl apply`` are reverted on the next run" (fluxcd/pkg ``ssa/patch.go``
    ``patchReplaceFieldsManagers``); the last-applied annotation is removed.
    """
    start(env)
    env.core.patch_namespaced_config_map(
        "app",
        NAMESPACE,
        {
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "data": {"debug": "on"},
        },
        field_manager="kubectl-edit",
    )
    assert reconcile(env, "cleanup") == ("ConfigMap/default/app configured",)
    cm = env.core.read_namespaced_config_map("app", NAMESPACE)
    assert cm.data == {"color": "blue"}
    assert not cm.metadata.annotations
    assert list(managers("app", env)) == [("kustomize-controller", "Apply")]


def test_prune_deletes_objects_that_left_the_inventory(env: FluxEnv) -> None:
    """With ``spec.prune`` an object removed from Git is deleted and leaves the inventory.

    Fact: ../shared/facts/appliers.md F3: ``spec.prune`` garbage-collects objects that dropped
    out of the inventory (``status.inventory.entries[] {id: <ns>_<name>_<group>_<kind>, v}``);
    kustomize-controller deletes only objects with its owner labels.
    """
    start(env)
    env.work.push({}, removed=("deploy/other.yaml",))
    env.request(("source.toolkit.fluxcd.io", "v1", "gitrepositories"), "fetch")
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert records[-1].changes == ("ConfigMap/default/other deleted",)
    with pytest.raises(ApiException) as gone:
        env.core.read_namespaced_config_map("other", NAMESPACE)
    assert gone.value.status == 404
    assert env.get(KUSTOMIZE)["status"]["inventory"] == {
        "entries": [{"id": "default_app__ConfigMap", "v": "v1"}]
    }


def test_without_prune_removed_objects_stay(env: FluxEnv) -> None:
    """With ``prune: false`` the object stays in the cluster but leaves the inventory.

    Fact: ../shared/facts/appliers.md F3 ``spec.prune`` (required bool; only when true are
    stale objects garbage-collected).
    """
    start(env, prune=False)
    env.work.push({}, removed=("deploy/other.yaml",))
    env.request(("source.toolkit.fluxcd.io", "v1", "gitrepositories"), "fetch")
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert records[-1].changes == ()
    assert env.core.read_namespaced_config_map("other", NAMESPACE).data == {"size": "small"}
    assert len(env.get(KUSTOMIZE)["status"]["inventory"]["entries"]) == 1


def test_prune_disabled_annotation_keeps_the_object(env: FluxEnv) -> None:
    """An object annotated ``kustomize.toolkit.fluxcd.io/prune: disabled`` is not deleted.

    Fact: ../shared/facts/appliers.md F3 (per-object opt-out of ``spec.prune``).
    """
    start(env)
    env.core.patch_namespaced_config_map(
        "other",
        NAMESPACE,
        {"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}},
        field_manager="operator",
    )
    env.work.push({}, removed=("deploy/other.yaml",))
    env.request(("source.toolkit.fluxcd.io", "v1", "gitrepositories"), "fetch")
    env.flux.reconcile_due()
    assert env.core.read_namespaced_config_map("other", NAMESPACE).data == {"size": "small"}
