"""A Kustomization in another cluster, named by spec.applier.clusterProviderRef (issue 5).

The applier's ClusterProvider holds a kubeconfig for a second API server double; its
accessFrom must admit the GitTarget's namespace (D2), and the stamp lands in that cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from kubernetes import client

from sandbox import manifests as m
from sandbox.flux import FluxControllers
from sandbox.flux.pacing import Pacing
from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from sandbox.paths import all_crd_files
from services.dispatcher import attempt as attempts
from services.dispatcher.jobs import ports
from shared.model.config import ApplierRef
from shared.model.requests import ApplyRequest
from tests.fixtures import dispatcher_context, foreign_commit_request, owned_at_tip
from tests.integration.dispatcher.test_attempts import CM, NS

pytestmark = pytest.mark.integration


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[tuple[KubeApiServer, KubeApiServer, GitHost, str]]:
    local, remote = KubeApiServer(all_crd_files()), KubeApiServer(all_crd_files())
    local.start()
    remote.start()
    host = GitHost(tmp_path / "git")
    host.start()
    url = host.create_repo("apps", files={"apps/cm.yaml": CM.format(v=1).encode()})
    yield local, remote, host, url
    host.stop()
    remote.stop()
    local.stop()


def _setup(
    local: KubeApiServer, remote: KubeApiServer, url: str, tmp_path: Path, admitted: list[str]
) -> str:
    """Our objects in the local cluster, Flux's in the remote one; the GitTarget's uid."""
    remote.write_kubeconfig(tmp_path / "remote.kubeconfig")
    lc, rc = client.CoreV1Api(local.api_client()), client.CoreV1Api(remote.api_client())
    for api, names in ((lc, [NS, "gitops-reverser"]), (rc, [NS])):
        for name in names:
            api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    lc.create_namespaced_secret(
        "gitops-reverser",
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="remote"),
            string_data={"kubeconfig": (tmp_path / "remote.kubeconfig").read_text()},
        ),
    )
    cluster = {
        "kubeConfig": {"secretRef": {"name": "remote", "key": "kubeconfig"}},
        "accessFrom": {"names": admitted},
    }
    applier = m.kustomization_applier(NS, "apps", clusterProviderRef={"name": "remote"})
    m.create(local.api_client(), m.cluster_provider("remote", **cluster))
    m.create(local.api_client(), m.git_provider(NS, "gp", url))
    target = m.create(local.api_client(), m.git_target(NS, "gt", "gp", "apps", applier=applier))
    m.create(remote.api_client(), m.git_repository(NS, "repo", url))
    m.create(remote.api_client(), m.kustomization(NS, "apps", "repo", "./apps"))
    return str(target["metadata"]["uid"])


def _attempt(
    local: KubeApiServer, url: str, uid: str, redis_client: redis.Redis, key_prefix: str
) -> tuple[ApplyRequest, str, str]:
    ctx = dispatcher_context(redis_client, key_prefix, local.api_client())
    bk, tip = owned_at_tip(ctx, redis_client, url, NS, "gp")
    request = foreign_commit_request(
        bk, url, tip, uid, ApplierRef("Kustomization", NS, "apps", "remote")
    )
    outcome = attempts.run(request, dataclasses.replace(ports(ctx), handled_timeout_s=30))
    return request, outcome.outcome, outcome.message


def test_the_stamp_lands_in_the_appliers_own_cluster(
    clusters: tuple[KubeApiServer, KubeApiServer, GitHost, str],
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    local, remote, _, url = clusters
    uid = _setup(local, remote, url, tmp_path, admitted=[NS])
    flux = FluxControllers(remote.api_client(), tmp_path / "flux", pacing=Pacing())
    flux.start()
    try:
        request, outcome, message = _attempt(local, url, uid, redis_client, key_prefix)
    finally:
        flux.stop()
    assert outcome == "Delivered", message
    remote_repo: dict[str, Any] = client.CustomObjectsApi(  # type: ignore[assignment]
        remote.api_client()
    ).get_namespaced_custom_object("source.toolkit.fluxcd.io", "v1", NS, "gitrepositories", "repo")
    assert remote_repo["metadata"]["annotations"]["reconcile.fluxcd.io/requestedAt"] == (
        request.token
    )


def test_a_cluster_provider_that_does_not_admit_the_namespace_gets_nothing(
    clusters: tuple[KubeApiServer, KubeApiServer, GitHost, str],
    tmp_path: Path,
    redis_client: redis.Redis,
    key_prefix: str,
) -> None:
    local, remote, _, url = clusters
    uid = _setup(local, remote, url, tmp_path, admitted=["someone-else"])
    _, outcome, _ = _attempt(local, url, uid, redis_client, key_prefix)
    assert outcome == "NothingToAsk"
    remote_repo: dict[str, Any] = client.CustomObjectsApi(  # type: ignore[assignment]
        remote.api_client()
    ).get_namespaced_custom_object("source.toolkit.fluxcd.io", "v1", NS, "gitrepositories", "repo")
    assert "reconcile.fluxcd.io/requestedAt" not in (
        remote_repo["metadata"].get("annotations") or {}
    )
