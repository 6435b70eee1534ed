"""``rules[].ignoreDifferences`` through the watcher and a branch worker (issue 27.13).

An HPA scales a Deployment as ``kube-controller-manager``; the sandbox API records that
manager's ownership of ``/spec/replicas`` in ``managedFields`` as kube-apiserver does
(sandbox/kube/managed.py). A rule naming that manager, and a JSON pointer, keeps Git's values:
the file keeps them and a write that changes only them makes no commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.githost import GitHost
from sandbox.githost.outside import git
from tests.integration.watcher.harness import Rig, mirror_everything, mirror_setup, watch_rule

pytestmark = pytest.mark.integration

FILE = "clusters/team-a/team-a/apps/deployments/web.yaml"
RULES = [
    {
        "apiGroups": ["apps"],
        "resources": ["deployments"],
        "ignoreDifferences": [
            {"managedFieldsManagers": ["kube-controller-manager"]},
            {"jsonPointers": ["/metadata/annotations/note"]},
        ],
    }
]


def _deployment() -> dict[str, Any]:
    labels = {"app": "web"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team-a", "annotations": {"note": "first"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "nginx:1"}]},
            },
        },
    }


def _patch(rig: Rig, body: dict[str, Any], manager: str) -> None:
    rig.cluster.resource("apps/v1", "Deployment").patch(
        name="web",
        namespace="team-a",
        body=body,
        content_type="application/merge-patch+json",
        field_manager=manager,
    )


def _commits(githost: GitHost) -> int:
    return int(git("rev-list", "--count", "main", cwd=githost.repo_path("team/config")))


def _file(githost: GitHost) -> str:
    return git("show", f"main:{FILE}", cwd=githost.repo_path("team/config"))


def test_fields_of_an_ignored_manager_and_pointer_keep_gits_value(
    rig: Rig, repo_url: str, githost: GitHost, tmp_path: Path
) -> None:
    mirror_setup(rig, repo_url, rules=RULES)
    rig.cluster.create(_deployment())
    rig.burst()
    mirror_everything(rig, repo_url, tmp_path / "w1")
    assert "replicas: 2" in _file(githost)
    first = _commits(githost)

    _patch(rig, {"spec": {"replicas": 5}}, "kube-controller-manager")
    _patch(rig, {"metadata": {"annotations": {"note": "second"}}}, "kubectl-edit")
    rig.burst()
    scaled = [e for e in rig.published(repo_url) if e.operation == "UPDATE"]
    assert "/spec/replicas" in scaled[0].ignored
    assert "/metadata/annotations/note" in scaled[-1].ignored
    mirror_everything(rig, repo_url, tmp_path / "w2")
    assert _commits(githost) == first  # only ignored fields changed: no commit

    _patch(
        rig,
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}},
        "kubectl-edit",
    )
    rig.burst()
    mirror_everything(rig, repo_url, tmp_path / "w3")
    assert _commits(githost) == first + 1
    text = _file(githost)
    assert "image: nginx:2" in text
    assert "replicas: 2" in text  # Git's value, not the API's 5
    assert "note: first" in text
    live = rig.cluster.get("apps/v1", "Deployment", "web", "team-a")
    assert live["spec"]["replicas"] == 5


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"jsonPointers": ["/metadata/name"]}, "identity is never ignored"),
        ({"jsonPointers": ["spec/replicas"]}, "should match"),
        ({}, "names jsonPointers or managedFieldsManagers"),
    ],
)
def test_the_crd_refuses_a_malformed_entry(rig: Rig, entry: dict[str, Any], words: str) -> None:
    rig.cluster.namespace("team-a")
    rules = [{"apiGroups": ["apps"], "resources": ["deployments"], "ignoreDifferences": [entry]}]
    with pytest.raises(ApiException) as refused:
        rig.cluster.create(watch_rule("team-a", rules))
    assert refused.value.status == 422
    assert words in str(refused.value.body)
