"""``kustomize build`` of the subset the product writes (P2), as the kustomize-controller double
runs it when ``spec.path`` holds a kustomization file (../shared/facts/appliers.md F3: the
controller builds ``spec.path`` with kustomize).

Written apart from the product's own renderer (``shared/kustomize/``) so that the e2e
tests compare two readings of kustomize's documented behaviour (docs/kustomize.md §Rendering),
not one with itself. The subset: ``resources``/``bases`` (files and directories holding a
kustomization), path-based strategic-merge ``patches``/``patchesStrategicMerge``,
``namespace``, ``commonLabels``, ``labels``, ``commonAnnotations``, ``replicas`` and
``images``. Any other field fails the build with ``BuildFailed`` naming it, as the real build
of a field the double does not know would not be applied the same way.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from sandbox.flux import goyaml
from sandbox.flux.manifests import KUSTOMIZE_FILES, BuildFailed

KNOWN = {
    "apiVersion", "kind", "resources", "bases", "namespace", "images", "replicas", "patches",
    "patchesStrategicMerge", "commonLabels", "labels", "commonAnnotations",
}  # fmt: skip
SCALED = {"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}
SELECTED = {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"}
TEMPLATED = SELECTED | {"Job", "ReplicationController"}
UNNAMESPACED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PersistentVolume", "StorageClass", "PriorityClass", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "APIService", "IngressClass", "RuntimeClass", "CSIDriver",
    "Node",
}  # fmt: skip
LIST_KEYS = {
    "containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
    "volumeMounts": "mountPath", "ports": "containerPort", "imagePullSecrets": "name",
}  # fmt: skip


def kustomization_file(directory: Path) -> Path | None:
    """The kustomization file of a directory, if any."""
    return next((directory / n for n in KUSTOMIZE_FILES if (directory / n).is_file()), None)


def build(directory: Path, top: Path) -> list[dict[str, Any]]:
    """The objects ``kustomize build directory`` gives for the subset; ``top`` bounds reads."""
    file = kustomization_file(directory)
    if file is None:
        raise BuildFailed(f"kustomize build failed: no kustomization in {directory}")
    spec = _load(file)
    objects: list[dict[str, Any]] = []
    for entry in [*(spec.get("resources") or []), *(spec.get("bases") or [])]:
        path = _inside(directory / str(entry), top, entry)
        if path.is_dir():
            objects.extend(build(path, top))
        else:
            objects.extend(_documents(path))
    patch_paths = [p["path"] for p in spec.get("patches") or []]
    for entry in patch_paths + list(spec.get("patchesStrategicMerge") or []):
        objects = _patch(objects, _documents(_inside(directory / entry, top, entry), patch=True))
    for obj in objects:
        _transform(obj, spec)
    return objects


def _load(file: Path) -> dict[str, Any]:
    try:
        spec = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        raise BuildFailed(f"kustomize build failed: {file.name}: {err}") from err
    unknown = sorted(set(spec) - KNOWN)
    if unknown:
        raise BuildFailed(
            f"kustomize build failed: {file.name}: field {unknown[0]!r} "
            "is not supported by the sandbox double"
        )
    for patch in spec.get("patches") or []:
        if set(patch) != {"path"}:
            raise BuildFailed("kustomize build failed: only path patches in the sandbox double")
    return dict(spec)


def _inside(path: Path, top: Path, entry: Any) -> Path:
    resolved = path.resolve()
    if top.resolve() not in resolved.parents and resolved != top.resolve():
        raise BuildFailed(f"kustomize build failed: {entry} leaves the artifact")
    if not resolved.exists():
        raise BuildFailed(f"kustomize build failed: accumulating resources: {entry} not found")
    return resolved


def _documents(path: Path, patch: bool = False) -> list[dict[str, Any]]:
    try:
        docs = [d for d in goyaml.load_all(path.read_text(encoding="utf-8")) if d]
    except (yaml.YAMLError, goyaml.JsonUnsupported) as err:
        raise BuildFailed(f"kustomize build failed: {path.name}: {err}") from err
    if not patch and not all(isinstance(d, dict) and d.get("kind") for d in docs):
        raise BuildFailed(f"kustomize build failed: {path.name}: not an object")
    return docs


def _patch(objects: list[dict[str, Any]], patches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for patch in patches:
        name = patch["metadata"]["name"]
        hits = [
            i
            for i, o in enumerate(objects)
            if o["kind"] == patch["kind"] and o["metadata"]["name"] == name
        ]
        if len(hits) != 1:
            raise BuildFailed(f"kustomize build failed: patch {name}: {len(hits)} targets")
        if patch.get("$patch") == "delete":
            del objects[hits[0]]
        else:
            objects[hits[0]] = _merge(objects[hits[0]], patch, "")
    return objects


def _merge(old: Any, new: Any, name: str) -> Any:
    """Strategic merge: maps merge, null deletes, named lists merge by their key."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = dict(old)
        for key, value in new.items():
            if key == "$patch":
                continue
            if value is None:
                out.pop(key, None)
            else:
                out[key] = _merge(old.get(key), value, key)
        return out
    key = LIST_KEYS.get(name)
    if key and isinstance(old, list) and isinstance(new, list):
        out_list = list(old)
        for item in new:
            same = [i for i, o in enumerate(out_list) if o.get(key) == item.get(key)]
            if not same:
                out_list.append(copy.deepcopy(item))
            elif item.get("$patch") == "delete":
                del out_list[same[0]]
            else:
                out_list[same[0]] = _merge(out_list[same[0]], item, "")
        return out_list
    return copy.deepcopy(new)


def _transform(obj: dict[str, Any], spec: dict[str, Any]) -> None:
    kind = obj["kind"]
    if spec.get("namespace") and kind not in UNNAMESPACED:
        obj["metadata"]["namespace"] = spec["namespace"]
    groups = [(spec.get("commonLabels") or {}, True, True)]
    groups += [
        (e["pairs"], e.get("includeSelectors", False), e.get("includeTemplates", False))
        for e in spec.get("labels") or []
    ]
    for pairs, selectors, templates in groups:
        if not pairs:
            continue
        _add(obj, ["metadata", "labels"], pairs)
        if selectors and kind == "Service":
            _add(obj, ["spec", "selector"], pairs)
        if selectors and kind in SELECTED:
            _add(obj, ["spec", "selector", "matchLabels"], pairs)
        if (selectors or templates) and kind in TEMPLATED:
            _add(obj, ["spec", "template", "metadata", "labels"], pairs)
    if spec.get("commonAnnotations"):
        _add(obj, ["metadata", "annotations"], spec["commonAnnotations"])
        if kind in TEMPLATED:
            _add(obj, ["spec", "template", "metadata", "annotations"], spec["commonAnnotations"])
    for entry in spec.get("replicas") or []:
        if kind in SCALED and obj["metadata"]["name"] == entry["name"]:
            obj.setdefault("spec", {})["replicas"] = entry["count"]
    for entry in spec.get("images") or []:
        _images(obj, entry)


def _add(obj: dict[str, Any], path: list[str], pairs: dict[str, Any]) -> None:
    for key in path:
        if not isinstance(obj.get(key), dict):
            obj[key] = {}
        obj = obj[key]
    obj.update({str(k): str(v) for k, v in pairs.items()})


def _images(node: Any, entry: dict[str, Any]) -> None:
    if isinstance(node, list):
        for item in node:
            _images(item, entry)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key in ("containers", "initContainers") and isinstance(value, list):
            for container in value:
                if isinstance(container, dict) and isinstance(container.get("image"), str):
                    container["image"] = _retag(container["image"], entry)
        else:
            _images(value, entry)


def _retag(image: str, entry: dict[str, Any]) -> str:
    """kustomize's images reference: match the name, then newName, newTag or digest."""
    rest, at, digest = image.partition("@")
    head, sep, tag = rest.rpartition(":")
    name = head if sep and "/" not in tag else rest
    tag = tag if sep and "/" not in tag else ""
    if name != entry["name"]:
        return image
    name = str(entry.get("newName") or name)
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    if entry.get("newTag") is not None:
        return f"{name}:{entry['newTag']}"
    return name + (f":{tag}" if tag else "") + (f"{at}{digest}" if digest else "")
