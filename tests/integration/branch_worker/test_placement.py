"""``spec.placement`` through a branch loop, a real work tree and a bare repository (issue
27.6): templates place new files, a collision is refused naming both objects with neither file
overwritten, ``useKustomize`` keeps a root kustomization listing every file through creates and
deletes, and ``serializeNamespace: false`` leaves the namespace to it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from services.branch_worker.branch import BranchLoop
from shared.model.events import ObjectEvent
from shared.model.ids import ObjectId
from shared.model.manifest import parse
from shared.model.placement import Placement
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _loop(rig: Rig, placement: Placement) -> BranchLoop:
    rig.target = dataclasses.replace(rig.target, placement=placement)
    rig.configs.publish_target(rig.target)
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    return rig.loop()


def _labelled(rig: Rig, name: str, labels: dict[str, str], data: str = "v") -> ObjectEvent:
    event = rig.event(name, "CREATE", {"k": data})
    assert event.body is not None
    body: dict[str, Any] = {**event.body, "metadata": {**event.body["metadata"], "labels": labels}}
    return dataclasses.replace(event, body=body)


def _write(rig: Rig, loop: BranchLoop, *events: ObjectEvent) -> None:
    for event in events:
        rig.events.publish(rig.bk, event)
    rig.drain(loop)
    loop.flush()


def test_templates_place_new_files_by_type_label_and_default(rig: Rig) -> None:
    placement = Placement(
        default="{namespace}/{resource}/{name}.yaml",
        by_type=(("configmaps", "{label:team|shared}/{group|core}/{name}.yml"),),
    )
    loop = _loop(rig, placement)
    _write(
        rig,
        loop,
        _labelled(rig, "web", {"team": "blue"}),
        _labelled(rig, "db", {}),
        rig.event("api", "CREATE", kind="Service"),
    )
    files = [f for f in rig.files() if f.startswith("apps/")]
    assert "apps/blue/core/web.yml" in files
    assert "apps/shared/core/db.yml" in files
    assert "apps/team/services/api.yaml" in files
    assert "name: web" in rig.show("apps/blue/core/web.yml")


def test_two_objects_on_one_path_are_refused_naming_both(rig: Rig) -> None:
    loop = _loop(rig, Placement(by_type=(("configmaps", "{namespace}/settings.yaml"),)))
    _write(rig, loop, _labelled(rig, "first", {}, "one"))
    before = rig.show("apps/team/settings.yaml")
    _write(rig, loop, _labelled(rig, "second", {}, "two"))
    assert rig.show("apps/team/settings.yaml") == before
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert refusal["reason"] == "PathCollision"
    assert "ConfigMap team/second" in refusal["message"]
    assert "ConfigMap team/first" in refusal["message"]
    assert "apps/team/settings.yaml" in refusal["message"]


def test_a_label_missing_without_fallback_is_refused(rig: Rig) -> None:
    loop = _loop(rig, Placement(default="{label:team}/{name}.yaml"))
    _write(rig, loop, _labelled(rig, "orphan", {}))
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert "has no label team" in refusal["message"]
    assert not [f for f in rig.files() if f.startswith("apps/")]


def _resources(rig: Rig) -> list[str]:
    (doc,) = parse(rig.show("apps/kustomization.yaml").encode())
    return list(doc.get("resources") or [])


def test_use_kustomize_keeps_a_root_listing_every_file(rig: Rig) -> None:
    """The root is made with the first write and follows creates and deletes; with
    serializeNamespace false it carries the namespace and the files do not."""
    placement = Placement(
        default="{resource}/{name}.yaml", use_kustomize=True, serialize_namespace=False
    )
    loop = _loop(rig, placement)
    _write(rig, loop, rig.event("a", "CREATE"), rig.event("b", "CREATE"))
    assert _resources(rig) == ["configmaps/a.yaml", "configmaps/b.yaml"]
    (root,) = parse(rig.show("apps/kustomization.yaml").encode())
    assert root["namespace"] == "team"
    assert "namespace:" not in rig.show("apps/configmaps/a.yaml")
    assert "spec.placement" in rig.show("apps/README.md")  # P4: the first object's bootstrap

    _write(rig, loop, rig.event("a", "DELETE"), rig.event("c", "CREATE"))
    assert _resources(rig) == ["configmaps/b.yaml", "configmaps/c.yaml"]
    assert "apps/configmaps/a.yaml" not in rig.files()
    _write(rig, loop, rig.event("b", "UPDATE", {"k": "changed"}))
    assert "changed" in rig.show("apps/configmaps/b.yaml")
    assert _resources(rig) == ["configmaps/b.yaml", "configmaps/c.yaml"]


def test_use_kustomize_lists_what_the_folder_held_before(rig: Rig) -> None:
    """A folder written before useKustomize was set: its files go into the new root."""
    loop = _loop(rig, Placement())
    _write(rig, loop, rig.event("old", "CREATE"))
    rig.target = dataclasses.replace(rig.target, placement=Placement(use_kustomize=True))
    rig.configs.publish_target(rig.target)  # the watcher publishes the changed GitTarget
    _write(rig, loop, rig.event("new", "CREATE"))
    assert _resources(rig) == ["team/configmaps/old.yaml", "team/configmaps/new.yaml"]


def _cluster_scoped(
    rig: Rig, api: str, resource: str, kind: str, name: str, **fields: Any
) -> ObjectEvent:
    """A CREATE of a cluster-scoped object (a ClusterWatchRule's), into the same GitTarget."""
    group, _, version = api.rpartition("/")
    body = {"apiVersion": api, "kind": kind, "metadata": {"name": name}, **fields}
    return dataclasses.replace(
        rig.event(name, "CREATE"),
        object_id=ObjectId(group, version, resource, kind, "", name),
        uid=f"uid-{kind}-{name}",
        body=body,
    )


def test_serialize_namespace_false_with_cluster_scoped_objects(rig: Rig) -> None:
    """Issue 27.6 with a ClusterWatchRule: under useKustomize and serializeNamespace false,
    a cluster-scoped object goes to ``_cluster/`` (no namespace to leave out) and is listed in
    the root, whose ``namespace:`` leaves built-in cluster-scoped kinds alone. One that
    namespace would change when rendered (kustomize renames a Namespace to it and sets the
    namespace of a binding's subject named default) is refused, naming why; nothing of it is
    written and the rest of the folder is untouched."""
    rbac = "rbac.authorization.k8s.io"
    placement = Placement(use_kustomize=True, serialize_namespace=False)
    loop = _loop(rig, placement)
    reader = _cluster_scoped(rig, f"{rbac}/v1", "clusterroles", "ClusterRole", "reader", rules=[])
    own = _cluster_scoped(rig, "v1", "namespaces", "Namespace", "team")
    _write(rig, loop, rig.event("a", "CREATE"), reader, own)
    role = f"_cluster/{rbac}/clusterroles/reader.yaml"
    assert _resources(rig) == ["team/configmaps/a.yaml", role, "_cluster/namespaces/team.yaml"]
    (root,) = parse(rig.show("apps/kustomization.yaml").encode())
    assert root["namespace"] == "team"
    (written,) = parse(rig.show(f"apps/{role}").encode())
    assert written["metadata"] == {"name": "reader"}
    assert rig.configs.refusal(rig.target.uid) is None
    before = rig.head()

    other = _cluster_scoped(rig, "v1", "namespaces", "Namespace", "other")
    _write(rig, loop, other)
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert refusal["reason"] == "KustomizeRenderRefused"
    assert refusal["message"].startswith(
        "Namespace other: apps/kustomization.yaml sets namespace: team, which renames the "
        "Namespace to team when the folder is rendered"
    )
    binding = _cluster_scoped(
        rig,
        f"{rbac}/v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        "bind",
        roleRef={"apiGroup": rbac, "kind": "ClusterRole", "name": "reader"},
        subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}],
    )
    _write(rig, loop, binding)
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert "sets the namespace of its subjects named default to team" in refusal["message"]
    assert rig.head() == before
    assert "apps/_cluster/namespaces/other.yaml" not in rig.files()
