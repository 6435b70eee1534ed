"""resourceVersion, generation, no-op writes and managedFields on the Kubernetes API double."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import request

pytestmark = pytest.mark.integration

CM_PATH = "/api/v1/namespaces/default/configmaps"
GIT_PATH = "/apis/source.toolkit.fluxcd.io/v1/namespaces/default/gitrepositories"
APP_PATH = "/apis/argoproj.io/v1alpha1/namespaces/default/applications"
MERGE = "application/merge-patch+json"


def _post(
    kube: KubeApiServer, path: str, body: dict[str, Any], query: str = "", agent: str | None = None
) -> dict[str, Any]:
    headers = {"User-Agent": agent} if agent else None
    code, obj, _ = request(kube, "POST", path + query, body, headers=headers)
    assert code == 201, obj
    return obj  # type: ignore[no-any-return]


def _repo(name: str = "r") -> dict[str, Any]:
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name},
        "spec": {"url": "https://example.com/r.git", "interval": "1m"},
    }


def _rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_one_counter_across_kinds(kube: KubeApiServer) -> None:
    """Every write anywhere takes the next value of one counter (etcd's revision).

    Fact: kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions (backed by
    etcd's global revision; clients must treat them as opaque but they come from one store).
    """
    first = _post(kube, CM_PATH, {"metadata": {"name": "a"}})
    second = _post(kube, GIT_PATH, _repo())
    third = _post(kube, "/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})
    assert _rv(first) < _rv(second) < _rv(third)
    assert _rv(third) == _rv(second) + 1


def test_noop_write_changes_and_bumps_nothing(kube: KubeApiServer) -> None:
    """A write that changes nothing keeps resourceVersion and managedFields times.

    Fact: kubernetes/kubernetes generic registry store.go Update
    (IgnoreManagedFieldsTimestampsTransformer, "Ignore changes that only affect managed
    fields timestamps") and the etcd store's no-op GuaranteedUpdate.
    """
    created = _post(kube, GIT_PATH, _repo())
    code, same, _ = request(kube, "PATCH", f"{GIT_PATH}/r", {"spec": {"interval": "1m"}}, MERGE)
    assert code == 200 and same["metadata"] == created["metadata"]
    code, again, _ = request(kube, "PUT", f"{GIT_PATH}/r", created)
    assert code == 200 and _rv(again) == _rv(created)
    code, listed, _ = request(kube, "GET", GIT_PATH)
    assert int(listed["metadata"]["resourceVersion"]) == _rv(created)


def test_custom_resource_generation_moves_only_outside_metadata(kube: KubeApiServer) -> None:
    """Spec changes bump generation; label changes and /status writes do not.

    Fact: kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/registry/
    customresource/strategy.go (PrepareForCreate SetGeneration(1); PrepareForUpdate bumps it
    when anything but metadata differs).
    """
    created = _post(kube, GIT_PATH, _repo())
    assert created["metadata"]["generation"] == 1
    code, labelled, _ = request(
        kube, "PATCH", f"{GIT_PATH}/r", {"metadata": {"labels": {"a": "b"}}}, MERGE
    )
    assert code == 200 and labelled["metadata"]["generation"] == 1
    assert _rv(labelled) > _rv(created)
    code, status, _ = request(
        kube, "PATCH", f"{GIT_PATH}/r/status", {"status": {"observedGeneration": 1}}, MERGE
    )
    assert code == 200 and status["metadata"]["generation"] == 1
    code, spec, _ = request(kube, "PATCH", f"{GIT_PATH}/r", {"spec": {"interval": "2m"}}, MERGE)
    assert code == 200 and spec["metadata"]["generation"] == 2


def test_application_status_change_moves_generation(kube: KubeApiServer) -> None:
    """Without a status subresource, a status change is a change outside metadata.

    Fact: customresource/strategy.go PrepareForUpdate compares everything but metadata; the
    Argo CD Application CRD has `subresources: {}` (/work/shared/facts/appliers.md A1).
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
    _post(kube, APP_PATH, app)
    code, obj, _ = request(
        kube, "PATCH", f"{APP_PATH}/app", {"status": {"sync": {"status": "Synced"}}}, MERGE
    )
    assert code == 200 and obj["metadata"]["generation"] == 2


def test_configmaps_have_no_generation(kube: KubeApiServer) -> None:
    """Kinds whose strategy does not track generation never get one.

    Fact: kubernetes/kubernetes pkg/registry/core/configmap/strategy.go (PrepareForCreate and
    PrepareForUpdate do not touch Generation).
    """
    created = _post(kube, CM_PATH, {"metadata": {"name": "a"}, "data": {"k": "1"}})
    assert "generation" not in created["metadata"]
    code, obj, _ = request(kube, "PATCH", f"{CM_PATH}/a", {"data": {"k": "2"}}, MERGE)
    assert code == 200 and "generation" not in obj["metadata"]


def test_managed_fields_name_the_manager(kube: KubeApiServer) -> None:
    """managedFields record fieldManager, else the User-Agent's program name, per operation.

    Fact: kubernetes/kubernetes apiserver handlers/rest.go managerOrUserAgent, and
    kubernetes.io/docs/reference/using-api/server-side-apply/#managers.
    """
    created = _post(
        kube, CM_PATH, {"metadata": {"name": "a"}, "data": {"k": "v"}}, "?fieldManager=writer"
    )
    entry = created["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("writer", "Update", "v1")
    assert entry["time"].endswith("Z") and len(entry["time"]) == 20
    by_agent = _post(
        kube,
        CM_PATH,
        {"metadata": {"name": "b"}, "data": {"k": "v"}},
        agent="kubectl/v1.32.4 (linux/amd64) kubernetes/abc",
    )
    assert by_agent["metadata"]["managedFields"][0]["manager"].startswith("kubectl")


def test_typed_client_sees_uid_and_timestamps(kube: KubeApiServer) -> None:
    """Objects carry uid, creationTimestamp and resourceVersion the typed client parses.

    Fact: /work/shared/facts/webhooks-git-libs.md §3.6 (create_* sent without Content-Type;
    the server defaults to JSON).
    """
    core = client.CoreV1Api(kube.api_client())
    cm = core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a"))
    )
    assert len(cm.metadata.uid) == 36 and cm.metadata.creation_timestamp.tzinfo is not None
    assert int(cm.metadata.resource_version) > 0
