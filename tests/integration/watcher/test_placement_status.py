"""``GitTarget.spec.placement`` as the watcher reads it (issue 27.6): published to the branch
workers, shown as ``status.placement``, refused by the CRD where its rules can say so, and a
placement only the product's check refuses fails its own GitTarget (``InvalidPlacement``)
while another tenant's is served."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from shared.model.ids import GitTargetUid
from shared.model.placement import Placement
from tests.integration.watcher.harness import (
    GROUP,
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    watch_rule,
)

pytestmark = pytest.mark.integration

CONFIGMAPS = [{"apiGroups": [""], "resources": ["configmaps"]}]


def _tenant(rig: Rig, ns: str, url: str, **spec: Any) -> str:
    rig.cluster.namespace(ns)
    rig.cluster.create(git_provider(ns, url))
    target = rig.cluster.create(git_target(ns, **spec))
    rig.cluster.create(watch_rule(ns, CONFIGMAPS))
    return str(target["metadata"]["uid"])


def test_placement_is_published_and_shown(rig: Rig, repo_url: str) -> None:
    rig.cluster.create(cluster_provider(accessFrom={"names": ["team-a", "team-b"]}))
    placement = {
        "default": "{resource}/{name}.yaml",
        "byType": {"apps/deployments": "{label:app|misc}/{name}.yaml"},
        "useKustomize": True,
    }
    uid = _tenant(rig, "team-a", repo_url, placement=placement, serializeNamespace=False)
    rig.burst()
    config = rig.config.target(GitTargetUid(uid))
    assert config is not None
    assert config.placement == Placement(
        "{resource}/{name}.yaml",
        (("apps/deployments", "{label:app|misc}/{name}.yaml"),),
        use_kustomize=True,
        serialize_namespace=False,
    )
    status = rig.cluster.get(GROUP, "GitTarget", "target", "team-a")["status"]
    assert status["placement"] == {
        "mode": "KustomizeRoot",
        "renderRoot": "clusters/team-a",
        "default": "{resource}/{name}.yaml",
        "byType": 1,
        "serializeNamespace": False,
    }


def test_a_placement_the_product_refuses_fails_only_its_gittarget(rig: Rig, repo_url: str) -> None:
    """``{namespace|..}`` passes the CRD's pattern, but a fallback of ``..`` would climb out
    of the folder: Validated=False InvalidPlacement, no watches; team-b is served."""
    rig.cluster.create(cluster_provider(accessFrom={"names": ["team-a", "team-b"]}))
    _tenant(rig, "team-a", repo_url, placement={"default": "{namespace|..}/{name}.yaml"})
    _tenant(rig, "team-b", repo_url)
    rig.cluster.configmap("team-a", "a", {"k": "v"})
    rig.cluster.configmap("team-b", "b", {"k": "v"})
    rig.burst()
    bad = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert (bad["Validated"]["status"], bad["Validated"]["reason"]) == ("False", "InvalidPlacement")
    assert "fallback" in bad["Validated"]["message"]
    good = rig.cluster.conditions("GitTarget", "target", "team-b")
    assert good["Validated"]["status"] == "True"
    assert {e.object_id.namespace for e in rig.published(repo_url)} == {"team-b"}


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"placement": {"default": "{namespace}/{name}"}}, "ends with .yaml or .yml"),
        ({"placement": {"default": "../{name}.yaml"}}, "stays under spec.path"),
        ({"placement": {"default": "{kind}/{name}.yaml"}}, "should match"),
        ({"placement": {"byType": {"Apps/X": "{name}.yaml"}}}, "group/resource"),
        ({"serializeNamespace": False}, "needs placement.useKustomize"),
    ],
)
def test_the_crd_refuses_a_bad_placement(rig: Rig, spec: dict[str, Any], words: str) -> None:
    rig.cluster.namespace("team-a")
    with pytest.raises(ApiException) as refused:
        rig.cluster.create(git_target("team-a", **spec))
    assert refused.value.status == 422
    assert words in str(refused.value.body)
