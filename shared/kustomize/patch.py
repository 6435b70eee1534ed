"""Path-based strategic-merge patches (``patches: [{path: file}]``, ``patchesStrategicMerge``):
maps merge, ``null`` removes a key, ``$patch: delete`` removes the object, lists of named items
(containers, env, volumes...) merge by their key, other lists are replaced."""

from __future__ import annotations

import copy
from typing import Any

from shared.kustomize.refusals import Unsupported
from shared.kustomize.subset import Reader
from shared.kustomize.tree import Rendered, Tree
from shared.model.manifest import parse

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


def apply_patch(
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
        return _merge_named(base, patch, merge_key)
    return copy.deepcopy(patch)


def _merge_named(base: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    """A list of named items, in kustomize's order: the patch's items first, in the patch's
    order (each merged onto the base item of its key; ``$patch: delete`` drops it), then the
    base items the patch does not name, in their order."""

    def key(item: Any) -> Any:
        return item.get(merge_key) if isinstance(item, dict) else None

    named = {key(item) for item in patch} - {None}
    by_key = {key(b): b for b in base if key(b) is not None}
    out: list[Any] = []
    for item in patch:
        if isinstance(item, dict) and item.get("$patch") == "delete":
            continue
        found = by_key.get(key(item)) if key(item) is not None else None
        out.append(copy.deepcopy(item) if found is None else merge(found, item))
    return out + [copy.deepcopy(b) for b in base if key(b) is None or key(b) not in named]
