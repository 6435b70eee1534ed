"""``GitTarget.spec.commit.window`` and ``spec.commit.message`` as the watcher reads them
(issue 27.7): published to the branch workers, a template that cannot run stalls only its
GitTarget (which stays served: its commits take the GitProvider's wording, C1), and the CRD
refuses a window over 24h."""

from __future__ import annotations

import pytest
from kubernetes.client.exceptions import ApiException

from shared.model.ids import GitTargetUid
from tests.integration.watcher.harness import (
    Rig,
    cluster_provider,
    git_provider,
    git_target,
    watch_rule,
)

pytestmark = pytest.mark.integration

CONFIGMAPS = [{"apiGroups": [""], "resources": ["configmaps"]}]


def _tenant(rig: Rig, ns: str, url: str, commit: dict[str, object]) -> str:
    rig.cluster.namespace(ns)
    rig.cluster.create(git_provider(ns, url))
    target = rig.cluster.create(git_target(ns, commit=commit))
    rig.cluster.create(watch_rule(ns, CONFIGMAPS))
    return str(target["metadata"]["uid"])


def test_window_and_templates_are_published_and_a_bad_one_stalls_only_its_target(
    rig: Rig, repo_url: str
) -> None:
    rig.cluster.create(cluster_provider(accessFrom={"names": ["team-a", "team-b"]}))
    good = {"window": "90s", "message": {"liveTemplate": "{{.Count}} edits"}}
    uid = _tenant(rig, "team-a", repo_url, good)
    _tenant(rig, "team-b", repo_url, {"message": {"reconcileTemplate": "{{.Nope}}"}})
    rig.cluster.configmap("team-b", "b", {"k": "v"})
    rig.burst()

    config = rig.config.target(GitTargetUid(uid))
    assert config is not None
    assert (config.commit_window_s, config.live_template) == (90.0, "{{.Count}} edits")
    a = rig.cluster.conditions("GitTarget", "target", "team-a")
    assert a["Ready"]["status"] == "True"
    b = rig.cluster.conditions("GitTarget", "target", "team-b")
    assert (b["Ready"]["status"], b["Ready"]["reason"]) == ("False", "InvalidCommitTemplate")
    assert "reconcileTemplate" in b["Ready"]["message"]
    assert b["Validated"]["status"] == "True"  # still served: its writes are mirrored
    assert {e.object_id.name for e in rig.published(repo_url)} == {"b"}


@pytest.mark.parametrize(
    ("commit", "words"),
    [
        ({"window": "25h"}, "at most 24h"),
        ({"window": "soon"}, "should match"),
        ({"message": {"liveTemplate": "{{.Name"}}, "no }} closes"),
    ],
)
def test_the_crd_refuses_a_bad_commit_setting(
    rig: Rig, commit: dict[str, object], words: str
) -> None:
    rig.cluster.namespace("team-a")
    with pytest.raises(ApiException) as refused:
        rig.cluster.create(git_target("team-a", commit=commit))
    assert refused.value.status == 422
    assert words in str(refused.value.body)
