"""The kustomize subset: rendering, edit planning and refusals (P2).

Each rendering case pins one documented kustomize behaviour (docs/kustomize.md §Rendering,
which cites kustomize's reference for each field; ../shared/facts/upstream-gitops-reverser.md
3.4 names the subset and 1.11 the refusals).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from shared import kustomize as ke
from shared import kustomize as kz
from shared.model.manifest import render

DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
        },
    },
}
CM: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cfg"},
    "data": {"a": "1"},
}
KUST = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
# the namespace every object lands in
namespace: shop
resources:
- deploy.yaml
- cm.yaml
images:
- name: nginx
  newTag: "1.27"  # pinned by the release
replicas:
- name: web
  count: 3
"""


def _files(kust: str = KUST, **extra: Any) -> dict[str, bytes]:
    files = {
        "apps/kustomization.yaml": kust.encode(),
        "apps/deploy.yaml": render(DEPLOY),
        "apps/cm.yaml": render(CM),
    }
    files.update(
        {
            k.replace("__", "/").replace("_yaml", ".yaml"): (
                v if isinstance(v, bytes) else v.encode()
            )
            for k, v in extra.items()
        }
    )
    return files


def _tree(files: dict[str, bytes], folder: str = "apps") -> kz.Tree:
    return kz.render_folder(folder, sorted(files), files.get)


def _obj(tree: kz.Tree, kind: str, name: str) -> dict[str, Any]:
    return copy.deepcopy(
        next(
            r.obj
            for r in tree.objects
            if r.obj["kind"] == kind and r.obj["metadata"]["name"] == name
        )
    )


def _live(files: dict[str, bytes]) -> dict[str, Any]:
    return _obj(_tree(files), "Deployment", "web")


# --- rendering -------------------------------------------------------------------------------


def test_namespace_images_and_replicas_are_rendered() -> None:
    """P2: namespace on every namespaced object, the images entry's newTag replaces the tag
    of every container whose image name matches, the replicas entry sets spec.replicas."""
    web = _live(_files())
    assert web["metadata"]["namespace"] == "shop"
    assert web["spec"]["replicas"] == 3
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert _obj(_tree(_files()), "ConfigMap", "cfg")["metadata"]["namespace"] == "shop"


@pytest.mark.parametrize(
    ("image", "entry", "expected"),
    [
        ("nginx:1.7.9", {"name": "nginx", "newTag": "1.8.0"}, "nginx:1.8.0"),
        (
            "postgres:8",
            {"name": "postgres", "newName": "my-registry/my-postgres", "newTag": "v1"},
            "my-registry/my-postgres:v1",
        ),
        ("my-demo-app:latest", {"name": "my-demo-app", "newName": "my-app"}, "my-app:latest"),
        ("alpine:3.7", {"name": "alpine", "digest": "sha256:24a0"}, "alpine@sha256:24a0"),
        ("host:5000/app:1", {"name": "host:5000/app", "newTag": "2"}, "host:5000/app:2"),
        ("nginxx:1", {"name": "nginx", "newTag": "2"}, "nginxx:1"),
    ],
)
def test_images_entries_follow_the_documented_examples(
    image: str, entry: dict[str, str], expected: str
) -> None:
    """P2: kustomize's images reference example (newTag, newName + newTag, newName, digest);
    a registry port belongs to the name; a different name is left alone."""
    name = kz.split_image(image)[0]
    assert (kz.set_image(image, entry) if name == entry["name"] else image) == expected


def test_strategic_merge_patch_and_common_labels_are_rendered() -> None:
    """P2: a path patch merges maps and named lists (containers by name); commonLabels go on
    metadata, the selector and the pod template; commonAnnotations on metadata."""
    kust = (
        KUST
        + "patches:\n- path: more.yaml\ncommonLabels:\n  team: a\ncommonAnnotations:\n  owner: me\n"
    )
    patch = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: web\n        env:\n        - name: MODE\n"
        "          value: fast\n"
    )
    web = _live(_files(kust, apps__more_yaml=patch))
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert container == {
        "name": "web",
        "image": "nginx:1.27",
        "env": [{"name": "MODE", "value": "fast"}],
    }
    assert web["metadata"]["labels"] == {"team": "a"}
    assert web["spec"]["selector"]["matchLabels"] == {"app": "web", "team": "a"}
    assert web["spec"]["template"]["metadata"]["labels"] == {"app": "web", "team": "a"}
    assert web["metadata"]["annotations"] == {"owner": "me"}


def test_an_overlay_renders_its_base_then_its_own_entries() -> None:
    """P2: an overlay's ../base is rendered first; the overlay's namespace and images win."""
    files = {
        "base/kustomization.yaml": b"resources:\n- deploy.yaml\n",
        "base/deploy.yaml": render(DEPLOY),
        "prod/kustomization.yaml": (
            b"resources:\n- ../base\nnamespace: prod\nimages:\n- name: nginx\n  newTag: '2'\n"
        ),
    }
    tree = kz.render_folder("prod", ["prod/kustomization.yaml"], files.get)
    web = _obj(tree, "Deployment", "web")
    assert web["metadata"]["namespace"] == "prod"
    assert web["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert tree.find(("apps", "Deployment", "prod", "web")) is not None


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        ("namePrefix: x-\n", "field 'namePrefix'"),
        ("configMapGenerator:\n- name: a\n", "field 'configMapGenerator'"),
        ("components:\n- ../c\n", "field 'components'"),
        ("helmCharts: []\n", "field 'helmCharts'"),
        ("patches:\n- patch: '[]'\n  target: {kind: Deployment}\n", "inline or targeted patch"),
        ("bases:\n- https://github.com/x/y//base?ref=v1\n", "remote base"),
        ("images:\n- name: nginx\n  newTag: 1.5\n", "images entry"),
        ("replicas:\n- name: web\n  count: many\n", "replicas entry"),
    ],
)
def test_everything_else_refuses_the_folder_naming_the_feature(extra: str, feature: str) -> None:
    """P2/1.11: anything outside the subset raises Unsupported naming the feature."""
    with pytest.raises(kz.Unsupported) as err:
        _tree(
            _files(
                KUST.replace(
                    'images:\n- name: nginx\n  newTag: "1.27"  # pinned by the release\n', ""
                ).replace("replicas:\n- name: web\n  count: 3\n", "")
                + extra
            )
        )
    assert err.value.feature == feature
    assert feature in str(err.value)


def test_a_manifest_no_kustomization_lists_refuses_the_folder() -> None:
    """P2: a YAML file inside a kustomization's directory that nothing lists is refused."""
    with pytest.raises(kz.Unsupported, match="outside every kustomization"):
        _tree(_files(apps__stray_yaml=render(CM)))


# --- edit planning -------------------------------------------------------------------------


def _apply(files: dict[str, bytes], plan: ke.Plan) -> dict[str, bytes]:
    out = dict(files)
    for path, data in plan.finish().items():
        if data is None:
            out.pop(path, None)
        else:
            out[path] = data
    return out


def _upsert(
    files: dict[str, bytes], obj: dict[str, Any], new_path: str = "apps/shop/x.yaml"
) -> dict[str, bytes]:
    before = _tree(files)
    plan = ke.plan_upsert(before, "apps", obj, new_path, files.get)
    assert plan is not None
    after = _apply(files, plan)
    ke.verify(before, _tree(after), kz.key_of(obj), obj)
    return after


def test_an_image_change_updates_the_entry_not_the_object_file() -> None:
    """P2 edit-through: the newTag of the entry changes, comments of the kustomization stay,
    the object's own file is not touched."""
    files = _files()
    live = _live(files)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    after = _upsert(files, live)
    assert after["apps/deploy.yaml"] == files["apps/deploy.yaml"]
    kust = after["apps/kustomization.yaml"].decode()
    assert "newTag: '1.28'" in kust or 'newTag: "1.28"' in kust
    assert "# pinned by the release" in kust and "# the namespace every object lands in" in kust
    assert _live(after) == live


def test_a_replica_change_updates_the_entry() -> None:
    """P2 edit-through: spec.replicas of an object covered by a replicas entry."""
    files = _files()
    live = _live(files)
    live["spec"]["replicas"] = 5
    after = _upsert(files, live)
    assert yaml.safe_load(after["apps/kustomization.yaml"])["replicas"] == [
        {"name": "web", "count": 5}
    ]
    assert after["apps/deploy.yaml"] == files["apps/deploy.yaml"]


def test_another_change_edits_the_document_without_copying_what_the_kustomization_adds() -> None:
    """P2: a label edit goes to the document; namespace, image and replicas stay the
    kustomization's (the file still has no namespace, its own tag and replica count)."""
    files = _files()
    live = _live(files)
    live["metadata"]["labels"] = {"tier": "front"}
    after = _upsert(files, live)
    doc = yaml.safe_load(after["apps/deploy.yaml"])
    assert doc["metadata"] == {"name": "web", "labels": {"tier": "front"}}
    assert doc["spec"]["replicas"] == 1
    assert doc["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert after["apps/kustomization.yaml"] == files["apps/kustomization.yaml"]


def test_a_new_object_is_listed_in_the_nearest_kustomization_without_its_namespace() -> None:
    """3.1/P2: beside the kustomization, added to resources; namespace: equal, so omitted."""
    files = _files()
    new = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "new", "namespace": "shop"},
        "data": {"b": "2"},
    }
    after = _upsert(files, new, "apps/shop/configmaps/new.yaml")
    assert (
        yaml.safe_load(after["apps/kustomization.yaml"])["resources"][-1]
        == "shop/configmaps/new.yaml"
    )
    assert "namespace" not in yaml.safe_load(after["apps/shop/configmaps/new.yaml"])["metadata"]


def test_a_deleted_objects_file_leaves_resources() -> None:
    """3.1/P2: the last document of a file gone: the file and its resources entry go."""
    files = _files()
    before = _tree(files)
    key = ("", "ConfigMap", "shop", "cfg")
    plan = ke.plan_delete(before, "apps", key, files.get)
    assert plan is not None
    after = _apply(files, plan)
    assert "apps/cm.yaml" not in after
    assert yaml.safe_load(after["apps/kustomization.yaml"])["resources"] == ["deploy.yaml"]
    ke.verify(before, _tree(after), key, None)


def test_an_entry_shared_by_two_objects_refuses_the_write() -> None:
    """1.11: two consumers of one images entry: changing it would move the other object."""
    other = dict(DEPLOY, metadata={"name": "api"})
    files = _files(KUST.replace("- cm.yaml", "- cm.yaml\n- api.yaml"), apps__api_yaml=render(other))
    live = _live(files)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    with pytest.raises(ke.Refused) as err:
        _upsert(files, live)
    assert err.value.reason == "KustomizeRenderRefused"
    assert "would also change Deployment shop/api" in str(err.value)


def test_a_change_a_patch_overrides_refuses_the_write() -> None:
    """P2: a field a read-only patch sets cannot take another value: the edit would not land."""
    kust = KUST + "patches:\n- path: more.yaml\n"
    patch = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
        "spec:\n  minReadySeconds: 5\n"
    )
    files = _files(kust, apps__more_yaml=patch)
    live = _live(files)
    live["spec"]["minReadySeconds"] = 9
    with pytest.raises(ke.Refused, match="would not land"):
        _upsert(files, live)


def test_a_base_outside_the_folder_is_never_written() -> None:
    """3.4: writes never leave spec.path: an overlay's base document is read-only."""
    files = {
        "base/kustomization.yaml": b"resources:\n- deploy.yaml\n",
        "base/deploy.yaml": render(DEPLOY),
        "prod/kustomization.yaml": b"resources:\n- ../base\n",
    }
    tree = kz.render_folder("prod", ["prod/kustomization.yaml"], files.get)
    live = _obj(tree, "Deployment", "web")
    live["metadata"]["labels"] = {"x": "y"}
    with pytest.raises(ke.Refused) as err:
        ke.plan_upsert(tree, "prod", live, "prod/x.yaml", files.get)
    assert err.value.reason == "WriteBoundaryRefused"


def test_a_render_after_a_write_parses_only_the_files_that_changed() -> None:
    """P2 (cost of the second render): an unchanged file's documents are reused, a changed
    one is read anew, and the new render keeps no link to the old one."""
    files = _files()
    first = _tree(files)
    changed = dict(files, **{"apps/cm.yaml": render(dict(CM, data={"a": "2"}))})
    second = kz.render_folder("apps", sorted(changed), changed.get, previous=first)
    assert second.documents["apps/deploy.yaml"] is first.documents["apps/deploy.yaml"]
    assert _obj(second, "ConfigMap", "cfg")["data"] == {"a": "2"}
    assert second.previous is None


def test_an_entry_value_a_yaml_1_1_reader_would_retype_is_quoted() -> None:
    """M2 in kustomization files too: a new tag ``on`` (a boolean to YAML 1.1, which
    PyYAML and kubectl read) is written quoted, so the entry stays a string."""
    files = _files()
    live = _live(files)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:on"
    after = _upsert(files, live)
    assert yaml.safe_load(after["apps/kustomization.yaml"])["images"][0]["newTag"] == "on"


DIAMOND_K = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\n"


def _diamond(depth: int, leaf: str = "") -> dict[str, bytes]:
    """The probe's N4 folder: each level lists both folders of the next."""
    files = {"c/kustomization.yaml": (DIAMOND_K % "l1a, l1b").encode()}
    for d in range(1, depth + 1):
        below = f"../l{d + 1}a, ../l{d + 1}b" if d < depth else leaf
        for side in "ab":
            files[f"c/l{d}{side}/kustomization.yaml"] = (DIAMOND_K % below).encode()
    return files


def _bounded(files: dict[str, bytes], reads: int) -> kz.Reader:
    """``files`` read at most ``reads`` times: the render before the fix read for hours."""
    count = 0

    def read(path: str) -> bytes | None:
        nonlocal count
        count += 1
        assert count <= reads, f"more than {reads} reads"
        return files.get(path)

    return read


def test_a_diamond_renders_each_directory_once() -> None:
    """N4: depth 16 read 393,278 files (68 s) and depth 30 never ended; each directory is now
    rendered once per render, so the reads grow with the files, not the paths."""
    files = _diamond(30)
    tree = kz.render_folder("c", sorted(files), _bounded(files, 20 * len(files)))
    assert tree.objects == []


def test_a_diamond_whose_objects_double_each_level_is_refused() -> None:
    """Rendered once, a directory's objects are still copied wherever it is listed: leaves
    with objects under a diamond make 2^depth of them, refused once the work passes
    ``MAX_WORK``, not rendered for hours."""
    files = _diamond(24, "cm.yaml")
    files["c/l24a/cm.yaml"] = render({**CM, "metadata": {"name": "a"}})
    files["c/l24b/cm.yaml"] = render({**CM, "metadata": {"name": "b"}})
    with pytest.raises(kz.Unsupported, match="render size"):
        kz.render_folder("c", sorted(files), _bounded(files, 20 * len(files)))


def test_kustomizations_nested_too_deep_are_refused() -> None:
    files = {
        f"c{'/n' * d}/kustomization.yaml": (DIAMOND_K % ("n" if d < 60 else "")).encode()
        for d in range(61)
    }
    with pytest.raises(kz.Unsupported, match=f"over {kz.MAX_DEPTH} deep"):
        kz.render_folder("c", sorted(files), files.get)


def test_a_base_listed_by_two_overlays_gives_each_its_own_copy() -> None:
    """Rendered once and copied: one overlay's namespace does not reach the other's objects."""
    head = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
    files = {
        "c/kustomization.yaml": f"{head}resources: [dev, prod]\n".encode(),
        "c/dev/kustomization.yaml": f"{head}namespace: dev\nresources: [../base]\n".encode(),
        "c/prod/kustomization.yaml": f"{head}namespace: prod\nresources: [../base]\n".encode(),
        "c/base/kustomization.yaml": f"{head}resources: [cm.yaml]\n".encode(),
        "c/base/cm.yaml": render(CM),
    }
    tree = kz.render_folder("c", sorted(files), files.get)
    assert sorted(r.key for r in tree.objects) == [
        ("", "ConfigMap", "dev", "cfg"),
        ("", "ConfigMap", "prod", "cfg"),
    ]


def test_deleting_the_workload_a_replicas_entry_names_is_refused() -> None:
    """P2: kustomize refuses a build whose replicas entry names no workload (the differential
    corpus's replicas-naming-no-object), so the write that would leave the folder so is refused
    rather than committed for Flux to fail on."""
    files = _files()
    before = _tree(files)
    plan = ke.plan_delete(before, "apps", ("apps", "Deployment", "shop", "web"), files.get)
    assert plan is not None
    with pytest.raises(kz.Unsupported, match=r"replicas entry.*'web'"):
        _tree(_apply(files, plan))


def test_namespace_effect_on_cluster_scoped_objects() -> None:
    """What a kustomization's ``namespace:`` does to a cluster-scoped object (the writer names
    it when such an object is refused under serializeNamespace false)."""
    rbac = "rbac.authorization.k8s.io/v1"
    role = {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "r"}, "rules": []}
    assert kz.namespace_effect(role, "team") == ""
    own = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}
    assert kz.namespace_effect(own, "team") == ""
    other = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}
    assert kz.namespace_effect(other, "team") == "renames the Namespace to team"
    custom = {"apiVersion": "x.io/v1", "kind": "ClusterThing", "metadata": {"name": "c"}}
    assert kz.namespace_effect(custom, "team").startswith(
        "sets its metadata.namespace to team (kustomize does not know ClusterThing"
    )
    binding = {
        "apiVersion": rbac,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "b"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}],
    }
    assert kz.namespace_effect(binding, "team") == (
        "sets the namespace of its subjects named default to team"
    )
    assert binding["subjects"][0]["namespace"] == "kube-system"  # not changed in place
