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

Each directory is rendered once per render, nesting and total work are bounded (``bounds``).
Pure: files come through a ``Reader`` (path to bytes, or None) so the branch worker reads its
work tree and the tests a dict. Everything that is not in the subset raises ``Unsupported``
naming the feature, which the writer turns into ``UnsupportedContent`` for the folder.
"""

from __future__ import annotations

import copy
import posixpath
from typing import Any

from shared.kustomize.bounds import check_depth
from shared.kustomize.patch import apply_patch
from shared.kustomize.refusals import Unsupported
from shared.kustomize.subset import Reader, is_kustomization, kustomization_in, load
from shared.kustomize.transform import transform
from shared.kustomize.tree import Rendered, Tree
from shared.model.manifest import parse


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
    check_depth(file, len(seen))
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
        out = apply_patch(file, _join(file, directory, patch), out, read, tree)
    transform(kust, out)
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
