"""A ClusterProvider with a kubeconfig Secret reads from another cluster (behaviour.md §1).

``spec.kubeConfig.secretRef`` names a Secret in the namespace the product runs in
(``Settings.namespace``); the watches of GitTargets that use it list and watch that cluster,
while our custom resources stay in the cluster the watcher runs in.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.watcher.harness import (
    CONFIGMAPS,
    Cluster,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    sandbox_cluster,
    watch_rule,
)

pytestmark = pytest.mark.integration
OPERATOR_NS = "gitops-reverser"  # Settings.namespace's default


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Cluster]:
    with sandbox_cluster(tmp_path / "remote") as running:
        yield running


def _kubeconfig_secret(rig: Rig, remote: Cluster, tmp_path: Path) -> None:
    path = tmp_path / "remote.kubeconfig"
    remote.server.write_kubeconfig(path)
    rig.cluster.namespace(OPERATOR_NS)
    rig.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "remote-kubeconfig", "namespace": OPERATOR_NS},
            "data": {"config": base64.b64encode(path.read_bytes()).decode()},
        }
    )


def test_watches_run_through_the_cluster_providers_kubeconfig(
    rig: Rig, remote: Cluster, repo_url: str, tmp_path: Path
) -> None:
    """Objects come from the remote cluster only; a ClusterProvider whose Secret is missing
    reports KubeConfigSecretNotFound (upstream reason names, facts/upstream-gitops-reverser.md
    §2.5)."""
    _kubeconfig_secret(rig, remote, tmp_path)
    local = rig.cluster
    ref = {"secretRef": {"name": "remote-kubeconfig", "key": "config"}}
    local.create(cluster_provider("remote", kubeConfig=ref, accessFrom={"names": ["team-a"]}))
    missing = {"secretRef": {"name": "nope", "key": "config"}}
    local.create(cluster_provider("broken", kubeConfig=missing, accessFrom={"selector": {}}))
    local.namespace("team-a")
    local.create(git_provider("team-a", repo_url))
    local.create(git_target("team-a", clusterProviderRef={"name": "remote"}))
    local.create(watch_rule("team-a", CONFIGMAPS))
    local.configmap("team-a", "near", {"where": "local"})
    remote.namespace("team-a")
    remote.configmap("team-a", "far", {"where": "remote"})
    rig.burst()

    events = rig.events(repo_url)
    assert [(e.object_id.name, e.body and e.body["data"]) for e in events] == [
        ("far", {"where": "remote"})
    ]
    assert local.conditions("ClusterProvider", "remote")["Ready"]["status"] == "True"
    broken = local.conditions("ClusterProvider", "broken")["Ready"]
    assert (broken["status"], broken["reason"]) == ("False", "KubeConfigSecretNotFound")
