"""The branch worker writes a kustomize folder through the subset, with real git (P2, 3.1,
3.4 and 1.11 of ../shared/facts/upstream-gitops-reverser.md).

An image or replica change of an object covered by an ``images``/``replicas`` entry updates
the entry, not the object's file; a new object is listed in the kustomization's
``resources`` and a deleted one leaves it; anything outside the subset, or a write that would
not land exactly, is refused in status and nothing is committed.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from sandbox.githost.outside import push
from services.branch_worker.branch import BranchLoop
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent, Operation
from shared.model.ids import ObjectId
from shared.model.manifest import render
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"image": "nginx:1.25", "name": "web"}]},
        },
    },
}
KUST = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: team  # every object of the folder
resources:
- deploy.yaml
images:
- name: nginx
  newTag: '1.27'
replicas:
- name: web
  count: 2
"""


def _seed(rig: Rig, kust: str = KUST, **files: str) -> None:
    push(
        str(rig.bare),
        rig.tmp / "kustomize-seed",
        {"apps/kustomization.yaml": kust, "apps/deploy.yaml": render(DEPLOY).decode(), **files},
        "a kustomize folder",
    )


def _live(image: str = "nginx:1.27", replicas: int = 2) -> dict[str, Any]:
    live = copy.deepcopy(DEPLOY)
    live["metadata"]["namespace"] = "team"
    live["spec"]["replicas"] = replicas
    live["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return live


def _publish(rig: Rig, body: dict[str, Any] | None, op: Operation = "UPDATE", **oid: str) -> None:
    fields = {"group": "apps", "version": "v1", "resource": "deployments", "kind": "Deployment"}
    fields.update(oid)
    name = oid.get("name", "web")
    rig.events.publish(
        rig.bk,
        ObjectEvent(
            target=GitTargetRef(rig.target.uid, "team", "gt"),
            operation=op,
            object_id=ObjectId(
                fields["group"], fields["version"], fields["resource"], fields["kind"], "team", name
            ),
            uid=f"uid-{name}",
            resource_version="2",
            body=body,
            managers=(ManagerEntry("kubectl-edit", "Update", "2026-11-29T10:00:00Z"),),
            observed_at=rig.clock.now,
        ),
    )


def _flush(rig: Rig, loop: BranchLoop) -> None:
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()


def test_an_image_and_replica_edit_updates_the_entries_not_the_file(rig: Rig) -> None:
    """P2 edit-through: one commit changes the kustomization's newTag and count; the object's
    file and the kustomization's comment are as they were."""
    _seed(rig)
    before = rig.show("apps/deploy.yaml")
    loop = rig.loop()
    _publish(rig, _live(image="nginx:1.28", replicas=4))
    _flush(rig, loop)
    assert len(rig.commits()) == 3
    assert rig.show("apps/deploy.yaml") == before
    kust = rig.show("apps/kustomization.yaml")
    assert "# every object of the folder" in kust
    body = yaml.safe_load(kust)
    assert body["images"] == [{"name": "nginx", "newTag": "1.28"}]
    assert body["replicas"] == [{"name": "web", "count": 4}]
    assert rig.configs.refusal(rig.target.uid) is None


def test_the_same_object_again_is_no_write(rig: Rig) -> None:
    """M3: the API object equals the render: no commit."""
    _seed(rig)
    loop = rig.loop()
    _publish(rig, _live())
    _flush(rig, loop)
    assert len(rig.commits()) == 2


def test_a_new_object_is_listed_and_a_deleted_one_leaves_resources(rig: Rig) -> None:
    """3.1: the new file is listed in resources, without the namespace the kustomization sets;
    its delete removes the file and the entry."""
    _seed(rig)
    loop = rig.loop()
    rig.publish("extra", "CREATE")
    _flush(rig, loop)
    path = "apps/team/configmaps/extra.yaml"
    assert yaml.safe_load(rig.show("apps/kustomization.yaml"))["resources"] == [
        "deploy.yaml",
        "team/configmaps/extra.yaml",
    ]
    assert "namespace" not in yaml.safe_load(rig.show(path))["metadata"]
    rig.publish("extra", "DELETE")
    _flush(rig, loop)
    assert path not in rig.files()
    assert yaml.safe_load(rig.show("apps/kustomization.yaml"))["resources"] == ["deploy.yaml"]


def test_a_feature_outside_the_subset_refuses_the_folder_naming_it(rig: Rig) -> None:
    """P2/1.11: namePrefix refuses the folder, UnsupportedContent naming the feature."""
    _seed(rig, KUST + "namePrefix: dev-\n")
    loop = rig.loop()
    _publish(rig, _live(image="nginx:1.28"))
    _flush(rig, loop)
    assert len(rig.commits()) == 2
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "UnsupportedContent"
    assert "namePrefix" in refusal["message"]


def test_an_edit_that_would_move_another_object_is_refused(rig: Rig) -> None:
    """P2 render verification: two Deployments share the images entry, so changing it would
    move the other one; refused, nothing committed, and the condition says which."""
    other = copy.deepcopy(DEPLOY)
    other["metadata"]["name"] = "api"
    _seed(
        rig,
        KUST.replace("- deploy.yaml", "- deploy.yaml\n- api.yaml"),
        **{"apps/api.yaml": render(other).decode()},
    )
    loop = rig.loop()
    _publish(rig, _live(image="nginx:1.28"))
    _flush(rig, loop)
    assert len(rig.commits()) == 2
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "KustomizeRenderRefused"
    assert "Deployment team/api" in refusal["message"]


def test_an_unknown_file_still_refuses_a_kustomize_folder(rig: Rig) -> None:
    """M10 holds in a kustomize folder: a file neither manifest nor recognised refuses it."""
    _seed(rig, **{"apps/deploy.sh": "#!/bin/sh\n"})
    loop = rig.loop()
    _publish(rig, _live(image="nginx:1.28"))
    _flush(rig, loop)
    assert len(rig.commits()) == 2
    assert rig.configs.refusal(rig.target.uid) == {
        "reason": "UnsupportedContent",
        "message": "apps/deploy.sh is not managed by gitops-reverser",
    }
