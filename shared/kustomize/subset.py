"""A kustomization file as the subset reads it: which fields, which entries, and a refusal
(``Unsupported``, naming the feature) for everything else (../shared/facts/upstream-gitops-
reverser.md 1.11). docs/kustomize.md lists the subset field by field."""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared.kustomize.refusals import Unsupported
from shared.model.manifest import parse

#: How the subset reads a file: path (relative to the repository) to bytes, or None when the
#: path holds no file. The branch worker reads its work tree, the tests a dict.
Reader = Callable[[str], bytes | None]
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
    if all(body[name] is None for name in body if name not in ("apiVersion", "kind")):
        raise Unsupported(file, "file", "it is empty, and kustomize refuses an empty one")
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
        _check_pairs(file, name, body.get(name) or {})
    for label in _list(file, body, "labels"):
        if not (isinstance(label, dict) and isinstance(label.get("pairs"), dict)):
            raise Unsupported(file, "labels entry", f"cannot read {label!r}")
        if set(label) - {"pairs", "includeSelectors", "includeTemplates"}:
            raise Unsupported(file, "labels entry", f"fields {sorted(label)}")
        _check_pairs(file, "labels entry", label["pairs"])


def _check_pairs(file: str, name: str, pairs: dict[Any, Any]) -> None:
    """Label and annotation pairs are strings: kustomize refuses a number, a bool or a null
    (``version: 1`` must be written ``version: "1"``)."""
    for key, value in pairs.items():
        if not (isinstance(key, str) and isinstance(value, str)):
            raise Unsupported(file, name, f"{key!r}: {value!r} is not a string pair")


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
