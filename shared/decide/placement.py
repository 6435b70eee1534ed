"""Where an object's document goes in a GitTarget's folder (M4), and what a folder may hold (M10).

An object already in the folder is found by identity wherever its file is; a new object goes to
``{path}/{namespace}/{group}/{resource}/{name}.yaml`` (group omitted for the core group,
``_cluster`` for cluster-scoped objects). A name too long for a file name (Kubernetes allows 253
characters, a file name holds 255 bytes with its ``.yaml``) keeps a readable prefix and ends in a
hash of the whole name; the object is found by identity all the same. ``spec.path`` ``.`` (or
empty) is the repository root. A folder holding files we neither manage nor
recognise is refused whole, since writing beside unknown content could break whoever owns it.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from shared.model.ids import ObjectId

#: Namespace segment of cluster-scoped objects: not a legal namespace name, so never a clash.
CLUSTER_SEGMENT = "_cluster"
#: Files a folder may hold beside manifests without being refused.
RECOGNISED_NAMES = frozenset(
    {
        ".gittargetignore",
        ".gitignore",
        ".gitattributes",
        ".gitkeep",
        "LICENSE",
        "COPYING",
        "NOTICE",
        ".sops.yaml",  # SOPS creation rules (P4): read by sops, never an object
    }
)
RECOGNISED_SUFFIXES = (".md",)
MANIFEST_SUFFIXES = (".yaml", ".yml")
#: Longest file name (bytes) written as ``{name}.yaml``; POSIX file systems allow 255.
MAX_FILE_NAME = 255
#: Bytes of an over-long name kept readable in front of its hash.
LONG_NAME_PREFIX = 200


class PlacementRefused(ValueError):
    """A write whose path would leave the GitTarget's folder."""


def canonical_path(folder: str, oid: ObjectId) -> str:
    """The path of a new object's document; refuses a path that leaves ``folder``."""
    segments = [oid.namespace or CLUSTER_SEGMENT]
    if oid.group:
        segments.append(oid.group)
    segments += [oid.resource, file_name(oid.name)]
    return inside(folder, posixpath.join(*segments))


def file_name(name: str) -> str:
    """``{name}.yaml``, or for a name too long for that, a readable prefix of it, ``-`` and 16
    hex digits of the name's SHA-256 (deterministic: the same name, the same file)."""
    whole = f"{name}.yaml"
    if len(whole.encode()) <= MAX_FILE_NAME:
        return whole
    prefix = name
    while len(prefix.encode()) > LONG_NAME_PREFIX:
        prefix = prefix[:-1]
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return f"{prefix}-{digest}.yaml"


def base_folder(folder: str) -> str:
    """A GitTarget's ``spec.path`` normalised: no leading or trailing ``/``; ``""`` for the
    repository root (``.`` and ``/`` both mean it, as docs/crds.md says)."""
    stripped = folder.strip("/")
    base = posixpath.normpath(stripped) if stripped else ""
    return "" if base == "." else base


def inside(folder: str, relative: str) -> str:
    """``folder/relative`` normalised, or PlacementRefused if it is not inside ``folder``."""
    base = base_folder(folder)
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
    #: What the user reads (the GitTarget's condition message); empty: the writer words it.
    detail: str = ""
