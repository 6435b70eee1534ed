"""Discovery of the Kubernetes API double, through the official client and kubectl."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client, dynamic

from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.kube_http import Kubectl

pytestmark = pytest.mark.integration

AGGREGATED_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def _get(kube: KubeApiServer, path: str, accept: str = "application/json") -> tuple[Any, Any]:
    api = kube.api_client()
    response = api.rest_client.pool_manager.request(
        "GET", kube.url + path, headers={"Accept": accept}
    )
    return json.loads(response.data), response.headers


def _resources(kube: KubeApiServer, path: str) -> dict[str, dict[str, Any]]:
    body, _ = _get(kube, path)
    return {r["name"]: r for r in body["resources"]}


def test_version_and_core_group(kube: KubeApiServer) -> None:
    """/version and /api as the official client's VersionApi and CoreApi read them.

    Fact: /work/shared/facts/webhooks-git-libs.md §3.6 (DynamicClient needs /version, /api,
    /apis, /apis/<g>/<v>).
    """
    version = client.VersionApi(kube.api_client()).get_code()
    assert (version.major, version.minor) == ("1", "32")
    assert client.CoreApi(kube.api_client()).get_api_versions().versions == ["v1"]


def test_core_resource_list_has_verbs_short_names_and_status(kube: KubeApiServer) -> None:
    """/api/v1 lists ConfigMap (shortName cm) and namespaces/status.

    Fact: kubernetes/kubernetes pkg/registry/core/configmap/storage/storage.go (ShortNames
    "cm"); namespaces have a status subresource served as "namespaces/status".
    """
    resources = _resources(kube, "/api/v1")
    assert resources["configmaps"]["shortNames"] == ["cm"]
    assert resources["configmaps"]["namespaced"] is True
    assert "watch" in resources["configmaps"]["verbs"]
    assert resources["namespaces"]["namespaced"] is False
    assert resources["namespaces/status"]["verbs"] == ["get", "patch", "update"]
    assert {"secrets", "services", "serviceaccounts", "events"} <= set(resources)


def test_named_groups_include_builtins_and_every_crd(kube: KubeApiServer) -> None:
    """/apis lists apps, rbac, authorization, events.k8s.io and each loaded CRD's group.

    Fact: kubernetes/kubernetes pkg/registry/apps/deployment/storage/storage.go (deployments
    with a status subresource, shortName deploy, category all).
    """
    groups = {g.name for g in client.ApisApi(kube.api_client()).get_api_versions().groups}
    assert {
        "apps",
        "rbac.authorization.k8s.io",
        "authorization.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
        "source.toolkit.fluxcd.io",
        "argoproj.io",
    } <= groups
    apps = _resources(kube, "/apis/apps/v1")
    assert apps["deployments"]["shortNames"] == ["deploy"]
    assert "deployments/status" in apps
    ssar = _resources(kube, "/apis/authorization.k8s.io/v1")["selfsubjectaccessreviews"]
    assert ssar["verbs"] == ["create"]


def test_crd_status_subresource_follows_the_crd(kube: KubeApiServer) -> None:
    """Flux GitRepository serves gitrepositories/status; Argo CD Application has none.

    Fact: /work/shared/crds/README.md ("The Argo CD Application CRD has no status
    subresource") and /work/shared/facts/appliers.md (Application `subresources: {}`).
    """
    flux = _resources(kube, "/apis/source.toolkit.fluxcd.io/v1")
    assert "gitrepositories/status" in flux
    assert flux["gitrepositories"]["shortNames"] == ["gitrepo"]
    argo = _resources(kube, "/apis/argoproj.io/v1alpha1")
    assert "applications" in argo and "applications/status" not in argo


def test_aggregated_discovery_is_served_when_asked(kube: KubeApiServer) -> None:
    """kubectl 1.32's first Accept gets an APIGroupDiscoveryList with the v2 content type.

    Fact: KEP-3352 aggregated discovery (kubernetes.io/docs/concepts/overview/
    kubernetes-api/#aggregated-discovery): Accept ...;g=apidiscovery.k8s.io;v=v2;
    as=APIGroupDiscoveryList.
    """
    body, headers = _get(kube, "/apis", AGGREGATED_ACCEPT)
    assert headers["Content-Type"].startswith("application/json;g=apidiscovery.k8s.io;v=v2")
    assert body["kind"] == "APIGroupDiscoveryList"
    apps = next(i for i in body["items"] if i["metadata"].get("name") == "apps")
    deployments = apps["versions"][0]["resources"][0]
    assert deployments["resource"] == "deployments"
    assert deployments["subresources"][0]["subresource"] == "status"


def test_dynamic_client_discovers_crds(kube: KubeApiServer) -> None:
    """The official DynamicClient finds a CRD kind by apiVersion and kind.

    Fact: /work/shared/facts/webhooks-git-libs.md §3.6 (DynamicClient discovery).
    """
    dyn = dynamic.DynamicClient(kube.api_client())
    resource = dyn.resources.get(api_version="source.toolkit.fluxcd.io/v1", kind="GitRepository")
    assert resource.name == "gitrepositories"
    assert resource.namespaced is True


def test_kubectl_api_resources_and_crds_without_errors(kubectl: Kubectl) -> None:
    """kubectl discovers everything (aggregated discovery) with nothing on stderr.

    Fact: kubectl 1.32 uses aggregated discovery when the server offers it (KEP-3352); the
    CRDs are served read-only as apiextensions.k8s.io/v1 customresourcedefinitions.
    """
    listed = kubectl("api-resources")
    assert listed.returncode == 0 and listed.stderr == ""
    assert "gitrepositories" in listed.stdout and "deployments" in listed.stdout
    crds = kubectl("get", "crd")
    assert crds.returncode == 0 and crds.stderr == ""
    assert "gitrepositories.source.toolkit.fluxcd.io" in crds.stdout


def test_cluster_roles_are_cluster_scoped(kube: KubeApiServer) -> None:
    """ClusterRoles are served by rbac.authorization.k8s.io/v1 without a namespace, as the Go
    operator's chart creates its manager and watch ClusterRoles (facts/upstream-gitops-reverser.md
    §6, RBAC), and a ClusterWatchRule mirrors them under _cluster/ (P6)."""
    rbac = _resources(kube, "/apis/rbac.authorization.k8s.io/v1")
    assert rbac["clusterroles"]["namespaced"] is False
    assert rbac["clusterroles"]["kind"] == "ClusterRole"
    assert rbac["roles"]["namespaced"] is True
