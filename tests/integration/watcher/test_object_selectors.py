"""``rules[].objectSelector`` against the sandbox API (issue 27.3).

Only objects whose labels match a rule's selector are published; an object whose labels stop
matching is published as a DELETE (and leaves Git), one that starts matching is published with
the change that made it match, and a selector changed on the WatchRule lists again. The
selector's shape and limits are the Go operator's (facts/upstream-0.50.md, "WatchRule /
ClusterWatchRule"); the CRD refuses a malformed one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from tests.integration.watcher.harness import (
    GROUP,
    Rig,
    mirror_everything,
    mirror_setup,
    watch_rule,
)
from tests.integration.watcher.test_caught_up import _behind
from tests.integration.watcher.test_cluster_watch_rules import (
    cluster_role,
    cluster_watch_rule,
    setup,
)

pytestmark = pytest.mark.integration


def _selected(selector: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"apiGroups": [""], "resources": ["configmaps"], "objectSelector": selector}]


def _labelled(rig: Rig, name: str, labels: dict[str, str]) -> None:
    rig.cluster.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "team-a", "labels": labels},
            "data": {"name": name},
        }
    )


def _relabel(rig: Rig, name: str, labels: dict[str, str | None]) -> None:
    rig.cluster.patch("v1", "ConfigMap", name, "team-a", {"metadata": {"labels": labels}})


def _ops(rig: Rig, url: str, since: int = 0) -> list[tuple[str, str]]:
    return [(e.object_id.name, e.operation) for e in rig.published(url)[since:]]


def _configmap_files(githost: GitHost) -> list[str]:
    bare = githost.repo_path("team/config")
    listed = git("ls-tree", "-r", "--name-only", "main", cwd=bare).split()
    return [p for p in listed if "/configmaps/" in p]


def test_only_selected_objects_are_published_and_relabels_add_and_remove(
    rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    """A ConfigMap enters the branch when its labels start matching (as the UPDATE that made
    them match) and leaves it as a DELETE when they stop; one that never matched is never
    published, not even its delete. The branch worker writes and removes the files."""
    mirror_setup(rig, repo_url, rules=_selected({"matchLabels": {"mirror": "yes"}}))
    _labelled(rig, "kept", {"mirror": "yes"})
    _labelled(rig, "later", {"mirror": "no"})
    _labelled(rig, "never", {})
    rig.burst()
    assert _ops(rig, repo_url) == [("kept", "CREATE")]
    mirror_everything(rig, repo_url, tmp_path / "work")
    assert _configmap_files(githost) == ["clusters/team-a/team-a/configmaps/kept.yaml"]

    _relabel(rig, "later", {"mirror": "yes"})
    _relabel(rig, "kept", {"mirror": None})
    rig.cluster.delete("v1", "ConfigMap", "never", "team-a")
    rig.burst()  # resumes from its cursor: the watch sees the relabels as events
    assert _ops(rig, repo_url, 1) == [("later", "UPDATE"), ("kept", "DELETE")]
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="selector") == 0

    mirror_everything(rig, repo_url, tmp_path / "work2")
    assert _configmap_files(githost) == ["clusters/team-a/team-a/configmaps/later.yaml"]


def test_a_changed_selector_lists_again(rig: Rig, repo_url: str) -> None:
    """A WatchRule whose selector changes: the next watch lists under the new one, publishes
    what it now selects and deletes what it no longer does (the set of expressions: In,
    NotIn, Exists, DoesNotExist, all of which must hold)."""
    mirror_setup(rig, repo_url, rules=_selected({"matchLabels": {"tier": "web"}}))
    _labelled(rig, "web", {"tier": "web"})
    _labelled(rig, "db", {"tier": "db", "team": "x"})
    _labelled(rig, "cache", {"tier": "cache", "team": "x", "frozen": "yes"})
    _labelled(rig, "api", {"tier": "api"})
    rig.burst()
    assert _ops(rig, repo_url) == [("web", "CREATE")]

    expressions = [
        {"key": "tier", "operator": "In", "values": ["db", "cache", "api"]},
        {"key": "tier", "operator": "NotIn", "values": ["api"]},
        {"key": "team", "operator": "Exists"},
        {"key": "frozen", "operator": "DoesNotExist"},
    ]
    rule = rig.cluster.resource(GROUP, "WatchRule")
    rule.patch(
        name="rule",
        namespace="team-a",
        content_type="application/merge-patch+json",
        body={"spec": {"rules": _selected({"matchExpressions": expressions})}},
    )
    rig.burst()
    assert sorted(_ops(rig, repo_url, 1)) == [("db", "CREATE"), ("web", "DELETE")]
    assert rig.metric("gitops_reverser_watcher_relists_total", cause="selector") == 1


@pytest.mark.parametrize(
    ("selector", "words"),
    [
        ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "need values"),
        ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}, "take none"),
        ({"matchExpressions": [{"key": "a", "operator": "Has"}]}, "Unsupported value"),
        ({"matchLabels": {f"k{i}": "v" for i in range(65)}}, "64"),
        ({"matchExpressions": [{"key": f"k{i}", "operator": "Exists"} for i in range(33)]}, "32"),
    ],
)
def test_the_crd_refuses_a_malformed_selector(
    rig: Rig, selector: dict[str, Any], words: str
) -> None:
    """The schema's enum and limits and its CEL rule refuse what apimachinery would reject."""
    rig.cluster.namespace("team-a")
    with pytest.raises(ApiException) as refused:
        rig.cluster.create(watch_rule("team-a", _selected(selector)))
    assert refused.value.status == 422
    assert words in str(refused.value.body)


def test_a_cluster_watch_rule_selects_cluster_scoped_objects_by_label(
    rig: Rig, repo_url: str
) -> None:
    """The same field on a ClusterWatchRule: only the labelled ClusterRole is published."""
    setup(rig, repo_url)
    rules = [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": ["clusterroles"],
            "objectSelector": {"matchLabels": {"mirror": "yes"}},
        }
    ]
    rig.cluster.create(cluster_watch_rule("rbac", "team-a", rules))
    labelled = cluster_role("picked", ["get"])
    labelled["metadata"]["labels"] = {"mirror": "yes"}
    rig.cluster.create(labelled)
    rig.cluster.create(cluster_role("skipped", ["get"]))
    rig.burst()
    names = {e.object_id.name for e in rig.published(repo_url)}
    assert "picked" in names
    assert "skipped" not in names
    ready = rig.cluster.conditions("ClusterWatchRule", "rbac")["Ready"]
    assert ready["status"] == "True"


def test_the_catch_up_check_compares_only_what_the_selector_selects(
    rig: Rig, repo_url: str
) -> None:
    """D3 (issue 11): the dispatcher lists the watch's namespace and compares it with what the
    watch published; an object the selector leaves out is never behind, an edit of a
    selected one made while the watcher is down is, and so is a relabel not yet seen."""
    mirror_setup(rig, repo_url, rules=_selected({"matchLabels": {"mirror": "yes"}}))
    _labelled(rig, "in", {"mirror": "yes"})
    _labelled(rig, "out", {})
    rig.burst()
    assert _behind(rig, repo_url) == []
    rig.cluster.patch("v1", "ConfigMap", "out", "team-a", {"data": {"n": "edited"}})
    assert _behind(rig, repo_url) == []
    _relabel(rig, "in", {"mirror": "no"})
    assert _behind(rig, repo_url) == ["team-a/configmaps/in"]
    rig.burst()
    assert _behind(rig, repo_url) == []
