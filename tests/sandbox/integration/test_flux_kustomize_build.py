"""The kustomize-controller double applies what the kustomize subset renders (P2).

Facts: ../shared/facts/appliers.md F3 (``spec.path`` is built with kustomize, then server-side
applied; a build error is ``Ready=False/BuildFailed``) and docs/kustomize.md §Rendering for
each field's documented behaviour.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from sandbox.flux.activity import APPLIED, FAILED, KUSTOMIZATION
from tests.sandbox.integration.flux_support import (
    NAMESPACE,
    FakeClock,
    FluxEnv,
    config_map,
    open_env,
)

pytestmark = pytest.mark.integration

FOLDER = {
    "deploy/kustomization.yaml": (
        "namespace: default\nresources:\n- app.yaml\n- web.yaml\ncommonLabels:\n  team: a\n"
        "images:\n- name: nginx\n  newTag: '1.27'\nreplicas:\n- name: web\n  count: 3\n"
    ),
    "deploy/app.yaml": config_map("app", {"color": "blue"}),
    "deploy/web.yaml": (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n"
        "  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n"
        "      labels: {app: web}\n    spec:\n      containers:\n"
        "      - {name: web, image: 'nginx:1.25'}\n"
    ),
}


@pytest.fixture
def env(tmp_path: Path) -> Iterator[FluxEnv]:
    yield from open_env(tmp_path, clock=FakeClock(), files=FOLDER)


def test_a_kustomize_folder_is_applied_as_rendered(env: FluxEnv) -> None:
    """The Deployment reaches the API with the entry's tag and count and the common label."""
    env.create_source()
    env.create_kustomization()
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert [r.action for r in records] == [APPLIED], records
    apps = client.AppsV1Api(env.kube.api_client())
    web = apps.read_namespaced_deployment("web", NAMESPACE)
    assert web.spec.replicas == 3
    assert web.spec.template.spec.containers[0].image == "nginx:1.27"
    assert web.metadata.labels["team"] == "a"
    assert env.core.read_namespaced_config_map("app", NAMESPACE).metadata.labels["team"] == "a"


def test_a_feature_beyond_the_subset_fails_the_build(env: FluxEnv) -> None:
    """F3: a build error is Ready=False/BuildFailed, and nothing is applied."""
    env.work.push(
        {"deploy/kustomization.yaml": FOLDER["deploy/kustomization.yaml"] + "namePrefix: x-\n"},
        message="prefix",
    )
    env.create_source()
    env.create_kustomization()
    records = [r for r in env.flux.reconcile_due() if r.kind == KUSTOMIZATION]
    assert [r.action for r in records] == [FAILED]
    assert "namePrefix" in records[0].message
    ks = env.get(("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"))
    ready = next(c for c in ks["status"]["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "BuildFailed"
