"""ClusterWatchRules against the sandbox API: cluster-scoped objects mirrored under _cluster/,
and the refusals that keep tenants apart (P6).

The watcher runs in burst mode and a branch worker applies what it published and pushes it to
the sandbox Git host, so the test reads the file from the repository. Facts:
facts/upstream-gitops-reverser.md §2.4 (ClusterWatchRule, ``GitTargetNamespaceNotAuthorized``)
and §3.1 (``_cluster`` in place of the namespace).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from tests.integration.watcher.harness import (
    CONFIGMAPS,
    GROUP,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    mirror_everything,
    watch_rule,
)

pytestmark = pytest.mark.integration

RBAC = "rbac.authorization.k8s.io/v1"
CLUSTERROLES = [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]}]
FILE = "clusters/team-a/_cluster/rbac.authorization.k8s.io/clusterroles/{}.yaml"


def cluster_watch_rule(
    name: str, ns: str, rules: list[dict[str, Any]], target: str = "target"
) -> dict[str, Any]:
    return {
        "apiVersion": GROUP,
        "kind": "ClusterWatchRule",
        "metadata": {"name": name},
        "spec": {"targetRef": {"name": target, "namespace": ns}, "rules": rules},
    }


def cluster_role(name: str, verbs: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": verbs}],
    }


def setup(rig: Rig, url: str, cluster_scoped: bool = True, ns: str = "team-a") -> None:
    c = rig.cluster
    c.namespace(ns)
    spec: dict[str, Any] = {"accessFrom": {"names": [ns]}}
    if cluster_scoped:
        spec["clusterScoped"] = {"accessFrom": {"names": [ns]}}
    c.create(cluster_provider(**spec))
    c.create(git_provider(ns, url))
    c.create(git_target(ns))


def test_a_cluster_role_edit_is_mirrored_under_cluster(
    rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    """P6, M4: a ClusterRole created and edited becomes _cluster/<group>/clusterroles/<name>
    in the GitTarget's folder, with no namespace in the document."""
    setup(rig, repo_url)
    rig.cluster.create(cluster_watch_rule("rbac", "team-a", CLUSTERROLES))
    rig.cluster.create(cluster_role("reader", ["get"]))
    rig.burst()
    rig.cluster.patch(
        RBAC,
        "ClusterRole",
        "reader",
        None,
        {"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]},
    )
    rig.burst()
    events = [e for e in rig.published(repo_url) if e.object_id.name == "reader"]
    assert [e.operation for e in events] == ["CREATE", "UPDATE"]
    assert {e.object_id.namespace for e in events} == {""}
    conditions = rig.cluster.conditions("ClusterWatchRule", "rbac")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("True", "Succeeded")

    mirror_everything(rig, repo_url, tmp_path / "work")
    bare = githost.repo_path("team/config")
    text = git("show", "main:" + FILE.format("reader"), cwd=bare)
    assert "kind: ClusterRole" in text
    assert "- list" in text
    assert "namespace:" not in text


def test_without_the_cluster_providers_allowance_nothing_is_mirrored(
    rig: Rig, repo_url: str
) -> None:
    """P6: a ClusterProvider that admits the namespace but not for cluster-scoped objects
    refuses the rule (ClusterScopeNotAdmitted, stalled) and no watch runs; the message names
    the GitTarget and the ClusterProvider (docs/crds.md; issue 23: it named only the
    namespace)."""
    setup(rig, repo_url, cluster_scoped=False)
    rig.cluster.create(cluster_watch_rule("rbac", "team-a", CLUSTERROLES))
    rig.cluster.create(cluster_role("reader", ["get"]))
    rig.burst()
    conditions = rig.cluster.conditions("ClusterWatchRule", "rbac")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == (
        "False",
        "ClusterScopeNotAdmitted",
    )
    message = conditions["Ready"]["message"]
    assert "GitTarget team-a/target" in message and "ClusterProvider default" in message
    assert conditions["Stalled"]["status"] == "True"
    assert rig.published(repo_url) == []


def test_a_git_target_of_an_unadmitted_namespace_is_not_authorized(rig: Rig, repo_url: str) -> None:
    """facts §2.4: the GitTarget's namespace must be admitted by its ClusterProvider."""
    setup(rig, repo_url)
    rig.cluster.namespace("team-b")
    rig.cluster.create(git_provider("team-b", repo_url))
    rig.cluster.create(git_target("team-b"))
    rig.cluster.create(cluster_watch_rule("rbac-b", "team-b", CLUSTERROLES))
    rig.cluster.create(cluster_role("reader", ["get"]))
    rig.burst()
    ready = rig.cluster.conditions("ClusterWatchRule", "rbac-b")["Ready"]
    assert ready["reason"] == "GitTargetNamespaceNotAuthorized"
    assert "GitTarget team-b/target" in ready["message"]
    assert "ClusterProvider default" in ready["message"]
    assert [e for e in rig.published(repo_url) if e.target.namespace == "team-b"] == []


def test_a_namespaced_watch_rule_cannot_select_cluster_roles(rig: Rig, repo_url: str) -> None:
    """The isolation rule: a tenant's WatchRule naming clusterroles resolves nothing
    (UnresolvedResources), even where the ClusterProvider allows cluster-scoped objects;
    its namespaced types are still mirrored."""
    setup(rig, repo_url)
    rig.cluster.create(watch_rule("team-a", CLUSTERROLES + CONFIGMAPS))
    rig.cluster.create(cluster_role("reader", ["get"]))
    rig.cluster.configmap("team-a", "app", {"a": "1"})
    rig.burst()
    conditions = rig.cluster.conditions("WatchRule", "rule", "team-a")
    assert conditions["Ready"]["reason"] == "UnresolvedResources"
    assert "clusterroles" in conditions["Ready"]["message"]
    names = {e.object_id.name for e in rig.published(repo_url)}
    assert "reader" not in names
