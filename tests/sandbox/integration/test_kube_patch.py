"""PATCH types, server-side apply and the status subresource on the Kubernetes API double."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import request

pytestmark = pytest.mark.integration

CM_PATH = "/api/v1/namespaces/default/configmaps"
GIT_PATH = "/apis/source.toolkit.fluxcd.io/v1/namespaces/default/gitrepositories"
APP_PATH = "/apis/argoproj.io/v1alpha1/namespaces/default/applications"
DEPLOY_PATH = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _cm(kube: KubeApiServer, name: str = "a") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}
    code, obj, _ = request(kube, "POST", CM_PATH, body)
    assert code == 201
    return obj  # type: ignore[no-any-return]


def _git_repo(kube: KubeApiServer, name: str = "r") -> dict[str, Any]:
    body = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name},
        "spec": {"url": "https://example.com/r.git", "interval": "1m"},
    }
    code, obj, _ = request(kube, "POST", GIT_PATH, body)
    assert code == 201, obj
    return obj  # type: ignore[no-any-return]


def test_merge_json_and_strategic_patches_on_a_builtin(kube: KubeApiServer) -> None:
    """Built-ins accept merge, JSON (with a failing `test` refused) and strategic patches.

    Fact: kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/
    and /work/shared/facts/webhooks-git-libs.md §3.6 (JSON Patch `test` guard on
    /metadata/resourceVersion).
    """
    _cm(kube)
    code, obj, _ = request(kube, "PATCH", f"{CM_PATH}/a", {"data": {"m": "1"}}, MERGE)
    assert code == 200 and obj["data"] == {"k": "v", "m": "1"}
    guard = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
        {"op": "replace", "path": "/data/k", "value": "w"},
    ]
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/a", guard, JSON_PATCH)
    assert code == 422 and status["kind"] == "Status"
    guard[0]["value"] = obj["metadata"]["resourceVersion"]
    code, obj, _ = request(kube, "PATCH", f"{CM_PATH}/a", guard, JSON_PATCH)
    assert code == 200 and obj["data"]["k"] == "w"
    code, obj, _ = request(kube, "PATCH", f"{CM_PATH}/a", {"data": {"s": "1"}}, STRATEGIC)
    assert code == 200 and obj["data"]["s"] == "1"


def test_strategic_merge_on_a_custom_resource_is_415(kube: KubeApiServer) -> None:
    """Custom resources do not take strategic merge patches: 415 UnsupportedMediaType.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/
    negotiation/errors.go errUnsupportedMediaType ('the body of the request was in an unknown
    format - accepted media types include: ...'); kubernetes.io docs on kubectl patch
    ("strategic merge patch is not supported for custom resources").
    """
    _git_repo(kube)
    code, status, _ = request(kube, "PATCH", f"{GIT_PATH}/r", {"spec": {}}, STRATEGIC)
    assert (code, status["reason"]) == (415, "UnsupportedMediaType")
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_patching_a_missing_object_is_404_but_apply_creates(kube: KubeApiServer) -> None:
    """A merge patch of a missing object is 404; an apply patch creates it (201).

    Fact: kubernetes/kubernetes handlers/patch.go (jsonPatcher.createNewObject returns
    NotFound; applyPatcher.createNewObject creates).
    """
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/none", {"data": {}}, MERGE)
    assert (code, status["reason"]) == (404, "NotFound")
    applied = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: made\ndata:\n  k: v\n"
    code, obj, _ = request(kube, "PATCH", f"{CM_PATH}/made?fieldManager=tester", applied, APPLY)
    assert code == 201 and obj["data"] == {"k": "v"}
    managers = {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]}
    assert ("tester", "Apply") in managers


def test_apply_needs_a_field_manager_and_force_needs_apply(kube: KubeApiServer) -> None:
    """Apply without fieldManager, or force on another patch type, is 422 on PatchOptions.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/
    validation.go ValidatePatchOptions ('is required for apply patch', 'may not be specified
    for non-apply patch').
    """
    _cm(kube)
    applied = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/a", applied, APPLY)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: '
        "Required value: is required for apply patch"
    )
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/a?force=true", {"data": {}}, MERGE)
    assert code == 422 and "may not be specified for non-apply patch" in status["message"]


def test_apply_through_the_official_client_with_force(kube: KubeApiServer) -> None:
    """CustomObjectsApi apply with field_manager and force, as the product sends it.

    Fact: /work/shared/facts/webhooks-git-libs.md §3.6 (Server-side apply: body dict,
    field_manager, force=True, _content_type="application/apply-patch+yaml").
    """
    custom = client.CustomObjectsApi(kube.api_client())
    body = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "r", "namespace": "default"},
        "spec": {"url": "https://example.com/r.git", "interval": "5m"},
    }
    args = ("source.toolkit.fluxcd.io", "v1", "default", "gitrepositories", "r", body)
    # The apply that creates answers 201, which this client method maps to no body.
    custom.patch_namespaced_custom_object(
        *args, field_manager="hookd", force=True, _content_type=APPLY
    )
    body["spec"]["interval"] = "6m"
    obj = custom.patch_namespaced_custom_object(
        *args, field_manager="hookd", force=True, _content_type=APPLY
    )
    assert obj["spec"]["interval"] == "6m" and obj["metadata"]["generation"] == 2
    assert any(
        e["manager"] == "hookd" and e["operation"] == "Apply"
        for e in obj["metadata"]["managedFields"]
    )


def test_apply_conflict_is_409_without_force(kube: KubeApiServer) -> None:
    """Two appliers setting one field to different values conflict unless forced.

    Fact: kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts (409 Conflict;
    force=true takes ownership).
    """
    first = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: one\n"
    second = first.replace("one", "two")
    assert request(kube, "PATCH", f"{CM_PATH}/a?fieldManager=first", first, APPLY)[0] == 201
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/a?fieldManager=second", second, APPLY)
    assert (code, status["reason"]) == (409, "Conflict")
    code, obj, _ = request(
        kube, "PATCH", f"{CM_PATH}/a?fieldManager=second&force=true", second, APPLY
    )
    assert code == 200 and obj["data"]["k"] == "two"


ARTIFACT = {
    "digest": "sha256:" + "0" * 64,
    "lastUpdateTime": "2026-01-01T00:00:00Z",
    "path": "gitrepository/default/r/abc.tar.gz",
    "revision": "main@sha1:abc",
    "url": "http://source-controller/abc.tar.gz",
}


def test_status_subresource_splits_writes(kube: KubeApiServer) -> None:
    """With a status subresource, main writes ignore status and /status writes only status.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
    customresource/strategy.go PrepareForUpdate, and status_strategy.go (copy old, set status).
    """
    repo = _git_repo(kube)
    repo["status"] = {"artifact": ARTIFACT}
    repo["spec"]["interval"] = "2m"
    code, obj, _ = request(kube, "PUT", f"{GIT_PATH}/r", repo)
    assert code == 200 and obj["spec"]["interval"] == "2m"
    assert "artifact" not in (obj.get("status") or {})
    obj["status"] = {"artifact": ARTIFACT}
    obj["spec"]["interval"] = "9m"
    code, after, _ = request(kube, "PUT", f"{GIT_PATH}/r/status", obj)
    assert code == 200 and after["status"]["artifact"]["revision"] == "main@sha1:abc"
    assert after["spec"]["interval"] == "2m"
    code, patched, _ = request(
        kube, "PATCH", f"{GIT_PATH}/r/status", {"status": {"observedGeneration": 2}}, MERGE
    )
    assert code == 200 and patched["status"]["observedGeneration"] == 2


def test_argo_application_status_is_written_with_the_object(kube: KubeApiServer) -> None:
    """The Argo CD Application has no status subresource: a main write sets its status.

    Fact: /work/shared/facts/appliers.md A1 ("The CRD has no status subresource ... A plain
    Update or Patch of the Application writes status too").
    """
    app = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "app"},
        "spec": {
            "destination": {"server": "https://kubernetes.default.svc"},
            "project": "default",
            "source": {"repoURL": "https://x/r.git"},
        },
    }
    code, obj, _ = request(kube, "POST", APP_PATH, app)
    assert code == 201, obj
    patch = {"status": {"sync": {"status": "Synced"}}}
    code, obj, _ = request(kube, "PATCH", f"{APP_PATH}/app", patch, MERGE)
    assert code == 200 and obj["status"]["sync"]["status"] == "Synced"
    code, missing, _ = request(kube, "GET", f"{APP_PATH}/app/status")
    assert (code, missing["reason"]) == (404, "NotFound")


def test_deployment_status_subresource_and_generation(kube: KubeApiServer) -> None:
    """A Deployment starts at generation 1; its status moves only through /status.

    Fact: kubernetes/kubernetes pkg/registry/apps/deployment/strategy.go (PrepareForCreate
    sets Generation 1 and clears Status; PrepareForUpdate keeps Status, bumps Generation on
    spec change).
    """
    core = client.AppsV1Api(kube.api_client())
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "d"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "d"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x:1")]),
            ),
        ),
        status=client.V1DeploymentStatus(replicas=5),
    )
    created = core.create_namespaced_deployment("default", deployment)
    assert created.metadata.generation == 1 and created.status.replicas is None
    status = {"status": {"replicas": 1, "readyReplicas": 1}}
    patched = core.patch_namespaced_deployment_status("d", "default", status)
    assert patched.status.ready_replicas == 1 and patched.metadata.generation == 1
    scaled = core.patch_namespaced_deployment("d", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2 and scaled.status.ready_replicas == 1


def test_patch_with_stale_resource_version_conflicts(kube: KubeApiServer) -> None:
    """A merge patch that carries a stale metadata.resourceVersion is 409.

    Fact: kubernetes/kubernetes generic registry store.go Update (newResourceVersion !=
    existingResourceVersion -> NewConflict); the patched object keeps the patch's version.
    """
    obj = _cm(kube)
    request(kube, "PATCH", f"{CM_PATH}/a", {"data": {"x": "1"}}, MERGE)
    stale = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]}, "data": {}}
    code, status, _ = request(kube, "PATCH", f"{CM_PATH}/a", stale, MERGE)
    assert (code, status["reason"]) == (409, "Conflict")
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube.api_client()).patch_namespaced_config_map(
            "a", "default", {"metadata": {"resourceVersion": "1"}}
        )
    assert caught.value.status == 409
