"""What the branch worker reads of a GitTarget's Flux Kustomization for the render-fidelity
gate (issue 27 item 8), against the sandbox's Kubernetes API server with the real Flux CRDs:
``spec.postBuild.substitute`` and ``substituteFrom`` ConfigMaps and Secrets, read through the
applier's ClusterProvider; and the gate end to end in the branch loop with what was read."""

from __future__ import annotations

import base64
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from sandbox import manifests as m
from sandbox.githost.outside import push
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.branch_worker.postbuild import PostBuildReader
from services.branch_worker.worktree import WorkTree
from shared.kube.clients import ClientFactory
from shared.kube.crds import CrdReader
from shared.kube.errors import KubePermanent, KubeTemporary
from shared.model.config import ApplierRef
from shared.model.render_fidelity import RENDER_NOT_VERIFIABLE, Mismatch
from shared.settings import Settings
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

NS = "team"
KS = ApplierRef("Kustomization", NS, "apps", "default")


@pytest.fixture
def api() -> Iterator[KubeApiServer]:
    server = KubeApiServer(all_crd_files())
    server.start()
    yield server
    server.stop()


def _reader(api: KubeApiServer) -> PostBuildReader:
    factory = ClientFactory(Settings(), time.time, local=api.api_client())
    return PostBuildReader(lambda: CrdReader(factory.local().client), factory)


def _install(api: KubeApiServer, post_build: dict[str, Any] | None, admitted: list[str]) -> None:
    made = api.api_client()
    m.create(made, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    m.create(made, m.cluster_provider("default", accessFrom={"names": admitted}))
    ks = m.kustomization(NS, "apps", "repo", "./apps")
    if post_build is not None:
        ks["spec"]["postBuild"] = post_build
    m.create(made, ks)


def _config_map(api: KubeApiServer, name: str, data: dict[str, str]) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}
    client.CoreV1Api(api.api_client()).create_namespaced_config_map(NS, body)  # type: ignore[arg-type]


def _secret(api: KubeApiServer, name: str, data: dict[str, str]) -> None:
    encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS}}
    m.create(api.api_client(), {**body, "data": encoded})


POST_BUILD = {
    "substitute": {"MODE": "fast"},
    "substituteFrom": [
        {"kind": "ConfigMap", "name": "vars"},
        {"kind": "Secret", "name": "secret-vars"},
        {"kind": "ConfigMap", "name": "maybe", "optional": True},
    ],
}


def test_the_reader_reads_inline_values_config_maps_and_secrets(
    rig: Rig, api: KubeApiServer
) -> None:
    _install(api, POST_BUILD, [NS])
    _config_map(api, "vars", {"REGION": "eu"})
    _secret(api, "secret-vars", {"TOKEN": "s3cret"})
    target = dataclasses.replace(rig.target, applier=KS)
    assert _reader(api)(target) == {"MODE": "fast", "REGION": "eu", "TOKEN": "s3cret"}
    assert _reader(api)(dataclasses.replace(target, applier=None)) is None
    gone = dataclasses.replace(target, applier=dataclasses.replace(KS, name="gone"))
    assert _reader(api)(gone) is None


def test_a_missing_required_source_is_unverifiable_and_not_admitted_reads_nothing(
    rig: Rig, api: KubeApiServer
) -> None:
    _install(api, POST_BUILD, ["elsewhere"])
    target = dataclasses.replace(rig.target, applier=KS)
    assert _reader(api)(target) is None  # the ClusterProvider does not admit team: not read
    client.CustomObjectsApi(api.api_client()).patch_cluster_custom_object(
        "gitopsreverser.io",
        "v1alpha1",
        "clusterproviders",
        "default",
        {"spec": {"accessFrom": {"names": [NS]}}},
    )
    found = _reader(api)(target)
    assert isinstance(found, Mismatch)
    assert found.reason == RENDER_NOT_VERIFIABLE
    assert "ConfigMap vars does not exist" in found.message


def test_a_kustomization_without_post_build_turns_the_gate_off(
    rig: Rig, api: KubeApiServer
) -> None:
    _install(api, None, [NS])
    assert _reader(api)(dataclasses.replace(rig.target, applier=KS)) is None


def test_the_branch_loop_refuses_with_what_it_read(rig: Rig, api: KubeApiServer) -> None:
    _install(api, POST_BUILD, [NS])
    _config_map(api, "vars", {"REGION": "eu"})
    _secret(api, "secret-vars", {"TOKEN": "s3cret"})
    file = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: team}\n"
    file += "data:\n  region: ${REGION}\n  mode: ${MODE:=slow}\n"
    push(str(rig.bare), rig.tmp / "person", {"apps/app.yaml": file}, "a person's file")
    rig.target = dataclasses.replace(rig.target, applier=KS)
    rig.configs.publish_target(rig.target)
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(trees=lambda ws: WorkTree(ws, renders=_reader(api)))
    before = rig.head()
    rig.publish("app", "UPDATE", {"region": "us", "mode": "fast"})
    rig.drain(loop)
    loop.flush()
    assert rig.head() == before
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "RenderDoesNotMatchLive"
    assert "data.region is '${REGION}' in Git" in refusal["message"]
    rig.publish("app", "UPDATE", {"region": "eu", "mode": "fast", "extra": "1"})
    rig.drain(loop)
    loop.flush()
    assert rig.show("apps/app.yaml").endswith(
        "region: ${REGION}\n  mode: ${MODE:=slow}\n  extra: '1'"
    )
    assert rig.configs.refusal(rig.target.uid) is None


def test_a_permanent_error_refuses_that_target_and_a_transient_one_is_retried(rig: Rig) -> None:
    """A tenant's Secret the product may not read fails only that GitTarget's writes; an API
    that is away makes the branch try again (the error goes up), refusing nothing."""
    target = dataclasses.replace(rig.target, applier=KS)
    factory = ClientFactory(Settings(), time.time)

    def forbidden() -> CrdReader:
        raise KubePermanent('secrets "vars" is forbidden', 403)

    found = PostBuildReader(forbidden, factory)(target)
    assert isinstance(found, Mismatch)
    assert found.reason == RENDER_NOT_VERIFIABLE
    assert "is forbidden" in found.message

    def away() -> CrdReader:
        raise KubeTemporary("connection refused")

    with pytest.raises(KubeTemporary):
        PostBuildReader(away, factory)(target)
