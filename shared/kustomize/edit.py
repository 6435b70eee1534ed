"""How an API edit of an object in a kustomize folder becomes file edits, and the check that
exactly that edit lands (P2; ../shared/facts/upstream-gitops-reverser.md 1.7 steps 3-5, 3.1,
3.4).

- An update compares the object as the folder renders it with the API object. A changed image
  covered by an ``images`` entry, or a changed ``spec.replicas`` covered by a ``replicas``
  entry, updates the entry (only fields the entry already declares); every other change goes
  to the object's own document, field by field, so what the kustomization adds (a namespace,
  labels, a patched field) is not copied into the file.
- A new object's file goes to its canonical path and is added to the ``resources`` of the
  nearest kustomization above it; under a ``namespace:`` equal to its own, the file omits
  ``metadata.namespace``. A delete removes the document, and the file and its ``resources``
  entry when it was the last one.
- ``verify`` renders the folder again and refuses the write unless the object renders exactly
  as the API holds it (or is gone) and no other object moved.

Kustomization files are edited with ruamel's round-trip mode, so their comments stay.
"""

from __future__ import annotations

import copy
import io
import itertools
import posixpath
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML

from shared.kustomize.refusals import Refused
from shared.kustomize.subset import Reader
from shared.kustomize.transform import split_image
from shared.kustomize.tree import Path, Rendered, Tree, key_of
from shared.model.manifest import _Yaml11SafeRepresenter, render

MISSING = object()


@dataclass(slots=True)
class Plan:
    """The files a write changes: new bytes, or None for a file deleted."""

    folder: str
    read: Reader
    edits: dict[str, bytes | None] = field(default_factory=dict)
    _kust: dict[str, Any] = field(default_factory=dict)

    def kustomization(self, file: str) -> Any:
        """The round-trip mapping of a kustomization this plan edits (read once)."""
        if file not in self._kust:
            _inside(self.folder, file)
            data = self.read(file)
            assert data is not None
            self._kust[file] = (_yaml(data).load(data.decode()), data)
        return self._kust[file][0]

    def finish(self) -> dict[str, bytes | None]:
        for file, (doc, data) in self._kust.items():
            out = io.StringIO()
            _yaml(data).dump(doc, out)
            self.edits[file] = out.getvalue().encode()
        return self.edits

    def reader(self) -> Reader:
        """The work tree as it would be after the plan."""
        edits = self.finish()

        def read(path: str) -> bytes | None:
            return edits[path] if path in edits else self.read(path)

        return read


def _yaml(data: bytes) -> YAML:
    """A round-trip dumper that keeps the file's sequence style (``- x`` under its key, or
    indented by two)."""
    yaml = YAML(typ="rt", pure=True)
    yaml.Representer = _Yaml11SafeRepresenter  # a tag like `on` stays a string (M2)
    yaml.width = 4096
    lines = data.decode().splitlines()
    flush = any(
        line.lstrip().startswith("- ")
        and prev.rstrip().endswith(":")
        and len(line) - len(line.lstrip()) == len(prev) - len(prev.lstrip())
        for prev, line in itertools.pairwise(lines)
    )
    yaml.indent(mapping=2, sequence=2 if flush else 4, offset=0 if flush else 2)
    return yaml


def _inside(folder: str, file: str) -> None:
    base = folder.strip("/")
    if base and base != "." and not file.startswith(base + "/"):
        raise Refused("WriteBoundaryRefused", f"{file} is outside {folder!r}: never written")


def plan_upsert(
    tree: Tree, folder: str, obj: dict[str, Any], new_path: str, read: Reader
) -> Plan | None:
    """The edits that make the folder render ``obj``; None when it already does (M3)."""
    plan = Plan(folder, read)
    found = tree.find(key_of(obj))
    if found is None:
        _add(tree, plan, obj, new_path)
        return plan
    if found.obj == obj:
        return None
    source = copy.deepcopy(tree.documents[found.file][found.index])
    for path, value in _diff(found.obj, obj):
        if not (
            _through_image(plan, found, path, value) or _through_replicas(plan, found, path, value)
        ):
            _put(source, path, value)
    if source != tree.documents[found.file][found.index]:
        _inside(folder, found.file)
        docs = list(tree.documents[found.file])
        docs[found.index] = source
        plan.edits[found.file] = b"---\n".join(render(d) for d in docs)
    return plan


def plan_delete(
    tree: Tree, folder: str, key: tuple[str, str, str, str], read: Reader
) -> Plan | None:
    """The edits that take the object out of the folder; None when it is not there."""
    found = tree.find(key)
    if found is None:
        return None
    plan = Plan(folder, read)
    _inside(folder, found.file)
    docs = [d for i, d in enumerate(tree.documents[found.file]) if i != found.index]
    if docs:
        plan.edits[found.file] = b"---\n".join(render(d) for d in docs)
        return plan
    plan.edits[found.file] = None
    for kfile, kust in tree.kustomizations.items():
        for name in ("resources", "bases"):
            entries = kust.data.get(name) or []
            gone = [
                e for e in entries if posixpath.normpath(posixpath.join(kust.dir, e)) == found.file
            ]
            if gone:
                listed = plan.kustomization(kfile)[name]
                for entry in gone:
                    listed.remove(entry)
    return plan


def _add(tree: Tree, plan: Plan, obj: dict[str, Any], path: str) -> None:
    kfile = _nearest(tree, plan.folder, posixpath.dirname(path))
    doc = copy.deepcopy(obj)
    if kfile is not None:
        kust = tree.kustomizations[kfile]
        if kust.data.get("namespace") and kust.data["namespace"] == doc["metadata"].get(
            "namespace"
        ):
            doc["metadata"].pop("namespace")  # 3.1: the kustomization sets it
        body = plan.kustomization(kfile)
        if body.get("resources") is None:
            body["resources"] = []
        body["resources"].append(posixpath.relpath(path, kust.dir or "."))
    plan.edits[path] = render(doc)


def _nearest(tree: Tree, folder: str, directory: str) -> str | None:
    """The kustomization of ``directory`` or the closest folder above it, within ``folder``."""
    base = folder.strip("/")
    base = "" if base == "." else base
    by_dir = {k.dir: f for f, k in tree.kustomizations.items()}
    while True:
        if directory in by_dir:
            return by_dir[directory]
        if directory == base or not directory:
            return None
        directory = posixpath.dirname(directory)


def _through_image(plan: Plan, found: Rendered, path: Path, value: Any) -> bool:
    """Edit through an ``images`` entry, when it covers ``path`` and can say ``value``."""
    if path not in found.images or not isinstance(value, str):
        return False
    kfile, index = found.images[path]
    entry = plan.kustomization(kfile)["images"][index]
    name, tag, digest = split_image(value)
    now = split_image(str(_get(found.obj, path)))
    wants = {
        part: text
        for part, text, was in (
            ("newName", name, now[0]),
            ("newTag", tag, now[1]),
            ("digest", digest, now[2]),
        )
        if text != was
    }
    if not wants or any(part not in entry or not wants[part] for part in wants):
        return False  # 3.4: only fields the entry declares; the document gets the edit
    for name, text in wants.items():
        entry[name] = text
    return True


def _through_replicas(plan: Plan, found: Rendered, path: Path, value: Any) -> bool:
    if path != ("spec", "replicas") or found.replicas is None or type(value) is not int:
        return False
    kfile, index = found.replicas
    plan.kustomization(kfile)["replicas"][index]["count"] = value
    return True


def _get(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def _diff(old: Any, new: Any, path: Path = ()) -> list[tuple[Path, Any]]:
    """Each place where ``new`` differs from ``old``: (path, new value or MISSING)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[tuple[Path, Any]] = []
        for key in [*old, *(k for k in new if k not in old)]:
            if key not in new:
                out.append(((*path, key), MISSING))
            elif key not in old:
                out.append(((*path, key), new[key]))
            else:
                out.extend(_diff(old[key], new[key], (*path, key)))
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in _diff(a, b, (*path, i))
        ]
    return [] if old == new else [(path, new)]


def _put(doc: Any, path: Path, value: Any) -> None:
    """Set (or, for MISSING, remove) ``path`` in a source document, as far as it goes."""
    for step in path[:-1]:
        if isinstance(step, int):
            if not (isinstance(doc, list) and step < len(doc)):
                return  # the list is not the document's own (a patch made it): verify decides
            doc = doc[step]
        else:
            if not isinstance(doc.get(step), (dict, list)):
                if value is MISSING:
                    return
                doc[step] = {}
            doc = doc[step]
    last = path[-1]
    if value is MISSING:
        if isinstance(doc, dict):
            doc.pop(last, None)
    elif isinstance(last, int):
        if isinstance(doc, list) and last < len(doc):
            doc[last] = copy.deepcopy(value)
    else:
        doc[last] = copy.deepcopy(value)


def verify(
    before: Tree, after: Tree, key: tuple[str, str, str, str], obj: dict[str, Any] | None
) -> None:
    """Refuse unless the object renders as ``obj`` (or is gone) and nothing else moved."""
    got = {r.key: r.obj for r in after.objects}
    if obj is not None and got.get(key) != obj:
        where = _first_difference(got.get(key), obj)
        raise Refused(
            "KustomizeRenderRefused",
            f"{key[1]} {key[2]}/{key[3]}: the edit would not land ({where} renders otherwise)",
        )
    if obj is None and key in got:
        raise Refused("KustomizeRenderRefused", f"{key[1]} {key[3]} would still be rendered")
    expected = {r.key: r.obj for r in before.objects if r.key != key}
    for other in sorted(set(expected) | (set(got) - {key})):
        if expected.get(other) != got.get(other):
            raise Refused(
                "KustomizeRenderRefused",
                f"the edit of {key[1]} {key[3]} would also change {other[1]} {other[2]}/{other[3]}",
            )


def _first_difference(old: Any, new: Any) -> str:
    diffs = _diff(old, new)
    return ".".join(str(s) for s in diffs[0][0]) or "the object" if diffs else "the object"
