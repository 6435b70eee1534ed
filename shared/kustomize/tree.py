"""A render's objects and what it read: ``Rendered`` remembers where each object came from
and which ``images``/``replicas`` entries shaped it, so an edit can go through them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.kustomize.bounds import check_work
from shared.kustomize.subset import Kustomization

#: Where a value sits in an object: map keys and list indexes.
Path = tuple[str | int, ...]


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
    #: Work done so far in this render (see ``bounds.MAX_WORK``).
    work: int = 0

    def charge(self, file: str, units: int) -> None:
        """Count ``units`` of work against ``bounds.MAX_WORK``; past it the folder is refused."""
        self.work += units
        check_work(file, self.work)

    def find(self, key: tuple[str, str, str, str]) -> Rendered | None:
        return next((r for r in self.objects if r.key == key), None)


def key_of(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of an object, as the writer's folder index keys it."""
    meta = obj.get("metadata") or {}
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    return (group, str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))
