"""Where an object's document goes in a GitTarget's folder (M4), and what a folder may hold (M10).

An object already in the folder is found by identity wherever its file is; a new object goes to
``{path}/{namespace}/{group}/{resource}/{name}.yaml`` (group omitted for the core group,
``_cluster`` for cluster-scoped objects). A folder holding files we neither manage nor
recognise is refused whole, since writing beside unknown content could break whoever owns it.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from shared.model.ids import ObjectId

#: Namespace segment of cluster-scoped objects: not a legal namespace name, so never a clash.
CLUSTER_SEGMENT = "_cluster"
#: Files a folder may hold beside manifests without being refused.
RECOGNISED_NAMES = frozenset(
    {".gittargetignore", ".gitignore", ".gitattributes", ".gitkeep", "LICENSE", "COPYING", "NOTICE"}
)
RECOGNISED_SUFFIXES = (".md",)
MANIFEST_SUFFIXES = (".yaml", ".yml")


class PlacementRefused(ValueError):
    """A write whose path would leave the GitTarget's folder."""


def canonical_path(folder: str, oid: ObjectId) -> str:
    """The path of a new object's document; refuses a path that leaves ``folder``."""
    segments = [oid.namespace or CLUSTER_SEGMENT]
    if oid.group:
        segments.append(oid.group)
    segments += [oid.resource, f"{oid.name}.yaml"]
    return inside(folder, posixpath.join(*segments))


def inside(folder: str, relative: str) -> str:
    """``folder/relative`` normalised, or PlacementRefused if it is not inside ``folder``."""
    base = posixpath.normpath(folder.strip("/")) if folder.strip("/") else ""
    joined = (
        posixpath.normpath(posixpath.join(base, relative)) if base else posixpath.normpath(relative)
    )
    if joined.startswith("../") or joined == ".." or joined.startswith("/"):
        raise PlacementRefused(f"{relative!r} would leave the folder {folder!r}")
    if base and not (joined == base or joined.startswith(base + "/")):
        raise PlacementRefused(f"{relative!r} would leave the folder {folder!r}")
    return joined


def is_manifest(path: str) -> bool:
    """A file that should hold Kubernetes objects."""
    return path.endswith(MANIFEST_SUFFIXES)


def is_recognised(path: str) -> bool:
    """A non-manifest file that a folder may hold (documentation, git metadata)."""
    name = posixpath.basename(path)
    return name in RECOGNISED_NAMES or name.endswith(RECOGNISED_SUFFIXES)


@dataclass(frozen=True, slots=True)
class FolderVerdict:
    """Whether a folder can be written, and the first file that says it cannot."""

    accepted: bool
    offending: str = ""
    reason: str = ""
