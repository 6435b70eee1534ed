"""The kustomize subset a GitTarget's folder may use, read and rendered here (P2).

GitOps Reverser reads and edits a small part of kustomize (../shared/facts/upstream-gitops-
reverser.md 3.4) and refuses the whole folder for anything else (1.11). No Python library on
PyPI renders kustomize (the package named ``kustomize`` generates manifests from Python code;
``pykustomize`` needs Python 3.14 and a Go build), so the subset is written here, each
behaviour pinned by a test to kustomize's documented behaviour (docs/kustomize.md cites it):

- ``resources``/``bases``: files (every document an object) and directories holding a
  kustomization, rendered first, in order; remote bases are refused;
- path-based strategic-merge ``patches``/``patchesStrategicMerge``: maps merge, ``null``
  removes a key, ``$patch: delete`` removes the object, lists of named items (containers,
  env, volumes...) merge by ``name``, other lists are replaced;
- ``namespace`` on every namespaced object; ``commonLabels`` (and ``labels`` entries) on
  metadata and, where asked, on selectors and pod templates; ``commonAnnotations``;
- ``replicas`` (``name``, ``count``) on Deployments, ReplicaSets, StatefulSets and
  ReplicationControllers of that name; ``images`` (``name`` with ``newName``, ``newTag`` or
  ``digest``) on every container and init container whose image has that name.

A render does bounded work whatever the folder holds (N4: a "diamond" of kustomizations that
each list both folders of the next level was rendered again on every path, in exponential
time, holding a branch's thread for hours): each directory is rendered once per render and
its objects copied where it is listed again, kustomizations nest at most ``MAX_DEPTH`` deep,
and a render that would visit more kustomizations and entries, and make more objects, than
``MAX_WORK`` in all is refused (``Unsupported``).

Pure: files come through a ``Reader`` (path to bytes, or None) so the branch worker reads its
work tree and the tests a dict. Everything that is not in the subset raises ``Unsupported``
naming the feature, which the writer turns into ``UnsupportedContent`` for the folder.
"""

from __future__ import annotations

import copy
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from shared.model.manifest import parse

Reader = Callable[[str], bytes | None]
Path = tuple[str | int, ...]
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
#: Fields of a kustomization the subset reads; any other field refuses the folder.
SUPPORTED_FIELDS = frozenset(
    {
        "apiVersion",
        "kind",
        "resources",
        "bases",
        "namespace",
        "images",
        "replicas",
        "patches",
        "patchesStrategicMerge",
        "commonLabels",
        "labels",
        "commonAnnotations",
    }
)
IMAGE_FIELDS = frozenset({"name", "newName", "newTag", "digest"})
#: Kinds the replicas field sets ``spec.replicas`` of (kustomize's replicas reference).
REPLICA_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"})
#: Kinds with a pod template and a label selector (``spec.selector.matchLabels``).
WORKLOAD_KINDS = frozenset({"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"})
TEMPLATE_KINDS = WORKLOAD_KINDS | {"Job", "ReplicationController"}
#: Built-in cluster-scoped kinds: the namespace transformer leaves them alone.
CLUSTER_KINDS = frozenset(
    {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "PersistentVolume",
        "StorageClass",
        "PriorityClass",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
        "APIService",
        "IngressClass",
        "RuntimeClass",
        "CSIDriver",
        "Node",
    }
)
#: Keys that strategic merge uses to merge lists of maps (the common ``patchMergeKey``s).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
}
IMAGE_LISTS = ("containers", "initContainers")
#: Deepest nesting of kustomizations a render follows (a deeper chain is refused, not recursed).
MAX_DEPTH = 40
#: Most work one render may do: kustomizations visited, entries read and objects made (copies
#: of a directory listed again included). A folder of 10,000 objects listed one file each
#: needs about 20,000; the probe's 49-file diamond needed 2^25 before directories were
#: rendered once.
MAX_WORK = 50_000


class Unsupported(ValueError):
    """A folder the subset cannot read; ``feature`` names what the user wrote."""

    def __init__(self, file: str, feature: str, detail: str = "") -> None:
        self.file = file
        self.feature = feature
        text = f"{file}: kustomize {feature} is not supported by gitops-reverser"
        super().__init__(f"{text} ({detail})" if detail else text)


@dataclass(frozen=True, slots=True)
class Kustomization:
    """One kustomization file, as read (``data``: its parsed mapping)."""

    file: str
    data: dict[str, Any]

    @property
    def dir(self) -> str:
        return posixpath.dirname(self.file)

    def entries(self) -> list[str]:
        return [*(self.data.get("resources") or ()), *(self.data.get("bases") or ())]

    def patch_files(self) -> list[str]:
        listed = [p["path"] for p in self.data.get("patches") or ()]
        return listed + list(self.data.get("patchesStrategicMerge") or ())


@dataclass(slots=True)
class Rendered:
    """One object of a render, with where it came from and which entries shaped it."""

    obj: dict[str, Any]
    file: str
    index: int
    #: Paths of container images, to the (kustomization file, index) of the images entry.
    images: dict[Path, tuple[str, int]] = field(default_factory=dict)
    #: The (kustomization file, index) of the replicas entry that set ``spec.replicas``.
    replicas: tuple[str, int] | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return key_of(self.obj)


@dataclass(slots=True)
class Tree:
    """A folder's render: its objects, and the files it read."""

    objects: list[Rendered]
    kustomizations: dict[str, Kustomization]
    #: Every file the render read as a resource, with its object documents.
    documents: dict[str, list[dict[str, Any]]]
    patches: set[str]
    #: The bytes each resource file had, so a later render reuses its parsed documents.
    sources: dict[str, bytes] = field(default_factory=dict)
    #: The render this one may reuse unchanged files of (a write re-renders the folder).
    previous: Tree | None = None
    #: Each directory's objects as rendered in this render, copied where it is listed again.
    built: dict[str, list[Rendered]] = field(default_factory=dict)
    #: Work done so far in this render (see ``MAX_WORK``).
    work: int = 0

    def charge(self, file: str, units: int) -> None:
        """Count ``units`` of work against ``MAX_WORK``; past it the folder is refused."""
        self.work += units
        if self.work > MAX_WORK:
            raise Unsupported(
                file, "render size", f"the render needs more than {MAX_WORK} steps; split it up"
            )

    def find(self, key: tuple[str, str, str, str]) -> Rendered | None:
        return next((r for r in self.objects if r.key == key), None)


def key_of(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of an object, as the writer's folder index keys it."""
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))


def kustomization_in(directory: str, read: Reader) -> str | None:
    """The kustomization file of ``directory``, if it holds one."""
    for name in KUSTOMIZATION_FILES:
        path = posixpath.join(directory, name) if directory else name
        if read(path) is not None:
            return path
    return None


def is_kustomization(path: str) -> bool:
    return posixpath.basename(path) in KUSTOMIZATION_FILES


def load(file: str, data: bytes) -> Kustomization:
    """Read a kustomization file, refusing what the subset does not read."""
    try:
        docs = parse(data)
    except Exception as err:
        raise Unsupported(file, "file", f"not YAML: {err}") from err
    if len(docs) != 1:
        raise Unsupported(file, "file", "it must hold one mapping")
    body = docs[0]
    if body.get("kind", "Kustomization") != "Kustomization":
        raise Unsupported(file, f"kind {body.get('kind')!r}")
    for name in body:
        if name not in SUPPORTED_FIELDS:
            raise Unsupported(file, f"field {name!r}")
    _check_entries(file, body)
    return Kustomization(file, body)


def _check_entries(file: str, body: dict[str, Any]) -> None:
    _check_paths(file, body)
    for patch in _list(file, body, "patches"):
        if not isinstance(patch, dict) or set(patch) != {"path"}:
            raise Unsupported(file, "inline or targeted patch", "only {path: file} patches")
    for image in _list(file, body, "images"):
        _check_image(file, image)
    for replica in _list(file, body, "replicas"):
        if not (isinstance(replica, dict) and set(replica) == {"name", "count"}):
            raise Unsupported(file, "replicas entry", f"cannot read {replica!r}")
        if type(replica["count"]) is not int:
            raise Unsupported(file, "replicas entry", f"count {replica['count']!r}")
    for name in ("commonLabels", "commonAnnotations"):
        if not isinstance(body.get(name) or {}, dict):
            raise Unsupported(file, name, "it must be a mapping")
    for label in _list(file, body, "labels"):
        if not (isinstance(label, dict) and isinstance(label.get("pairs"), dict)):
            raise Unsupported(file, "labels entry", f"cannot read {label!r}")
        if set(label) - {"pairs", "includeSelectors", "includeTemplates"}:
            raise Unsupported(file, "labels entry", f"fields {sorted(label)}")


def _check_paths(file: str, body: dict[str, Any]) -> None:
    for name in ("resources", "bases", "patchesStrategicMerge"):
        for entry in _list(file, body, name):
            if not isinstance(entry, str) or "\n" in entry:
                raise Unsupported(file, f"{name} entry", "inline patches are refused")
            if "://" in entry or entry.startswith(("git@", "github.com/")) or "?ref=" in entry:
                raise Unsupported(file, "remote base", entry)


def _check_image(file: str, image: Any) -> None:
    if not (isinstance(image, dict) and set(image) <= IMAGE_FIELDS and image.get("name")):
        raise Unsupported(file, "images entry", f"cannot read {image!r}")
    if any(not isinstance(v, str) for v in image.values()):
        raise Unsupported(file, "images entry", f"a value that is not a string in {image!r}")
    if "newTag" in image and "digest" in image:
        raise Unsupported(file, "images entry", "both newTag and digest")


def _list(file: str, body: dict[str, Any], name: str) -> list[Any]:
    value = body.get(name) or []
    if not isinstance(value, list):
        raise Unsupported(file, name, "it must be a list")
    return value


def build(directory: str, read: Reader, tree: Tree | None = None) -> Tree:
    """Render the kustomization in ``directory`` (kustomize build)."""
    tree = tree or Tree([], {}, {}, set())
    tree.objects.extend(_build(directory, read, tree, ()))
    return tree


def render_folder(
    folder: str, files: list[str], read: Reader, previous: Tree | None = None
) -> Tree:
    """The render of a GitTarget's folder: each kustomization no other one lists (a root), and
    every manifest outside a kustomization's directory as it is. A manifest inside a
    kustomization's directory that no kustomization lists is refused (nothing would apply it),
    and so is an object rendered twice (kustomize refuses the build). ``previous``: an
    earlier render whose files are not parsed again where their bytes are the same."""
    kdirs = {posixpath.dirname(f) for f in files if is_kustomization(f)}
    listed: set[str] = set()
    for kdir in sorted(kdirs):
        file = kustomization_in(kdir, read)
        assert file is not None
        data = read(file)
        assert data is not None
        kust = load(file, data)
        listed.update(_join(file, kdir, entry) for entry in kust.entries())
    tree = Tree([], {}, {}, set(), previous=previous)
    for root in sorted(kdirs - listed):
        build(root, read, tree)
    for file in files:
        if is_kustomization(file) or file in tree.documents or file in tree.patches:
            continue
        if not file.endswith((".yaml", ".yml")):
            continue
        if any(_under(file, kdir) for kdir in kdirs):
            raise Unsupported(file, "file outside every kustomization", "list it in resources")
        data = read(file)
        assert data is not None
        docs = _parsed(tree, file, data)
        tree.objects.extend(Rendered(copy.deepcopy(d), file, i) for i, d in enumerate(docs))
    seen: dict[tuple[str, str, str, str], str] = {}
    for r in tree.objects:
        if r.key in seen:
            raise Unsupported(
                r.file, "duplicate object", f"{'/'.join(r.key)} also in {seen[r.key]}"
            )
        seen[r.key] = r.file
    tree.previous = None  # reused, not kept: a chain of renders would hold every file ever
    tree.built = {}
    return tree


def _under(file: str, directory: str) -> bool:
    return not directory or file.startswith(directory + "/")


def _build(directory: str, read: Reader, tree: Tree, seen: tuple[str, ...]) -> list[Rendered]:
    """The objects of the kustomization in ``directory``, rendered once per render (``built``)."""
    file = kustomization_in(directory, read)
    if file is None:
        raise Unsupported(directory or ".", "directory resource", "it holds no kustomization")
    if file in seen:
        raise Unsupported(file, "resources", "a cycle of kustomizations")
    if len(seen) >= MAX_DEPTH:
        raise Unsupported(file, "resources", f"kustomizations nested over {MAX_DEPTH} deep")
    tree.charge(file, 1)
    done = tree.built.get(directory)
    if done is not None:
        tree.charge(file, len(done))
        return [_copy(r) for r in done]
    data = read(file)
    assert data is not None
    kust = tree.kustomizations[file] = load(file, data)
    out: list[Rendered] = []
    for entry in kust.entries():
        tree.charge(file, 1)
        path = _join(file, directory, entry)
        if kustomization_in(path, read) is not None:
            out.extend(_build(path, read, tree, (*seen, file)))
        else:
            out.extend(_resource(file, path, read, tree))
    for patch in kust.patch_files():
        tree.charge(file, 1)
        out = _patch(file, _join(file, directory, patch), out, read, tree)
    _transform(kust, out)
    if seen:  # a root is listed by no kustomization: nothing renders it again
        tree.charge(file, len(out))
        tree.built[directory] = [_copy(r) for r in out]  # the caller's transformers change it
    return out


def _copy(r: Rendered) -> Rendered:
    return Rendered(copy.deepcopy(r.obj), r.file, r.index, dict(r.images), r.replicas)


def _join(file: str, directory: str, entry: str) -> str:
    path = posixpath.normpath(posixpath.join(directory, entry))
    if path == ".." or path.startswith("../") or path.startswith("/"):
        raise Unsupported(file, "resource outside the repository", entry)
    return "" if path == "." else path


def _resource(file: str, path: str, read: Reader, tree: Tree) -> list[Rendered]:
    data = read(path)
    if data is None:
        raise Unsupported(file, "resources", f"{path} not found")
    docs = _parsed(tree, path, data)
    tree.charge(file, len(docs))
    return [Rendered(copy.deepcopy(doc), path, i) for i, doc in enumerate(docs)]


def _parsed(tree: Tree, path: str, data: bytes) -> list[dict[str, Any]]:
    """A resource file's objects, parsed once for as long as its bytes stay the same."""
    before = tree.previous
    if before is not None and before.sources.get(path) == data:
        docs = before.documents[path]
    else:
        docs = _objects(path, data)
    tree.documents[path], tree.sources[path] = docs, data
    return docs


def _objects(path: str, data: bytes) -> list[dict[str, Any]]:
    try:
        docs = parse(data)
    except Exception as err:
        raise Unsupported(path, "resource", f"not YAML: {err}") from err
    for doc in docs:
        if not (
            doc.get("apiVersion") and doc.get("kind") and (doc.get("metadata") or {}).get("name")
        ):
            raise Unsupported(path, "resource", "a document without apiVersion, kind and name")
    return docs


def _patch(
    file: str, path: str, objects: list[Rendered], read: Reader, tree: Tree
) -> list[Rendered]:
    data = read(path)
    if data is None:
        raise Unsupported(file, "patches", f"{path} not found")
    try:
        docs = parse(data)
    except Exception as err:
        raise Unsupported(path, "patch", f"not YAML: {err}") from err
    if not docs:
        raise Unsupported(path, "JSON 6902 patch", "only strategic-merge patches")
    tree.patches.add(path)
    for doc in docs:
        meta = doc.get("metadata") or {}
        matches = [
            r
            for r in objects
            if r.obj.get("kind") == doc.get("kind")
            and r.obj["metadata"].get("name") == meta.get("name")
            and (not meta.get("namespace") or r.key[2] == meta.get("namespace"))
        ]
        if len(matches) != 1:
            raise Unsupported(path, "patch", f"it matches {len(matches)} objects, not one")
        if doc.get("$patch") == "delete":
            objects = [r for r in objects if r is not matches[0]]
        else:
            matches[0].obj = merge(matches[0].obj, doc)
    return objects


def merge(base: Any, patch: Any, key: str = "") -> Any:
    """Strategic merge of ``patch`` onto ``base`` (the subset: maps, null, named lists)."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for name, value in patch.items():
            if name == "$patch":
                continue
            if value is None:
                out.pop(name, None)
            else:
                out[name] = merge(base.get(name), value, name)
        return out
    merge_key = MERGE_KEYS.get(key)
    if merge_key and isinstance(base, list) and isinstance(patch, list):
        out_list = list(base)
        for item in patch:
            at = next(
                (
                    i
                    for i, b in enumerate(out_list)
                    if isinstance(b, dict)
                    and isinstance(item, dict)
                    and b.get(merge_key) == item.get(merge_key)
                ),
                None,
            )
            if at is None:
                out_list.append(copy.deepcopy(item))
            elif isinstance(item, dict) and item.get("$patch") == "delete":
                del out_list[at]
            else:
                out_list[at] = merge(out_list[at], item)
        return out_list
    return copy.deepcopy(patch)


def _transform(kust: Kustomization, objects: list[Rendered]) -> None:
    """The kustomization's own transformers, in kustomize's order for the subset."""
    body = kust.data
    namespace = body.get("namespace")
    labels = [(dict(body.get("commonLabels") or {}), True, True)]
    labels += [
        (dict(e["pairs"]), bool(e.get("includeSelectors")), bool(e.get("includeTemplates")))
        for e in body.get("labels") or ()
    ]
    annotations = dict(body.get("commonAnnotations") or {})
    for r in objects:
        kind = r.obj.get("kind")
        if namespace and kind not in CLUSTER_KINDS:
            r.obj["metadata"]["namespace"] = namespace
        for pairs, selectors, templates in labels:
            _labels(r.obj, pairs, selectors, templates)
        if annotations:
            _stamp(r.obj, ("metadata", "annotations"), annotations)
            if kind in TEMPLATE_KINDS:
                _stamp(r.obj, ("spec", "template", "metadata", "annotations"), annotations)
        for index, entry in enumerate(body.get("replicas") or ()):
            if kind in REPLICA_KINDS and r.obj["metadata"]["name"] == entry["name"]:
                r.obj.setdefault("spec", {})["replicas"] = entry["count"]
                r.replicas = (kust.file, index)
        for index, entry in enumerate(body.get("images") or ()):
            for path, image in list(images_of(r.obj)):
                if split_image(image)[0] == entry["name"]:
                    _set(r.obj, path, set_image(image, entry))
                    r.images[path] = (kust.file, index)


def _labels(obj: dict[str, Any], pairs: dict[str, Any], selectors: bool, templates: bool) -> None:
    if not pairs:
        return
    _stamp(obj, ("metadata", "labels"), pairs)
    kind = obj.get("kind")
    if selectors and kind == "Service":
        _stamp(obj, ("spec", "selector"), pairs)
    if selectors and kind in WORKLOAD_KINDS:
        _stamp(obj, ("spec", "selector", "matchLabels"), pairs)
    if (selectors or templates) and kind in TEMPLATE_KINDS:
        _stamp(obj, ("spec", "template", "metadata", "labels"), pairs)


def _stamp(obj: dict[str, Any], path: tuple[str, ...], pairs: dict[str, Any]) -> None:
    node = obj
    for name in path:
        if not isinstance(node.get(name), dict):
            node[name] = {}
        node = node[name]
    node.update({str(k): str(v) for k, v in pairs.items()})


def images_of(obj: Any, path: Path = ()) -> Iterator[tuple[Path, str]]:
    """Every container and init container image of an object, with its path."""
    if isinstance(obj, dict):
        for name, value in obj.items():
            if name in IMAGE_LISTS and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, dict) and isinstance(item.get("image"), str):
                        yield (*path, name, i, "image"), item["image"]
            else:
                yield from images_of(value, (*path, name))
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            yield from images_of(item, (*path, i))


def split_image(image: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference; a registry port is part of the name."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    tag = ""
    if colon > slash:
        name, tag = name[:colon], name[colon + 1 :]
    return name, tag, digest


def set_image(image: str, entry: dict[str, Any]) -> str:
    """An image after an ``images`` entry: a new name, and a new tag or digest."""
    name, tag, digest = split_image(image)
    name = str(entry.get("newName") or name)
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    if entry.get("newTag") is not None:
        return f"{name}:{entry['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def _set(obj: Any, path: Path, value: Any) -> None:
    for step in path[:-1]:
        obj = obj[step]
    obj[path[-1]] = value
