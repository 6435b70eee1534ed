"""Files the writer adds to a GitTarget's folder with its first object (P4).

They tell whoever opens the folder what it is (``README.md``) and give them the escape hatch of
``.gittargetignore`` (gitignore syntax, every line a comment until someone writes a pattern).
Each is written only when missing, in the same commit as the first object document, so the
folder is never half set up. ``BOOTSTRAP_FILES`` is what the writer stages, in order: a module
that needs another file (``.sops.yaml`` when ``spec.encryption`` is set, say) defines a
``BootstrapFile`` whose ``content`` answers None when the GitTarget does not want it, and adds
it to that tuple (one line here; the writer needs no change). Pure: the writer writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.decide.ignore import IGNORE_FILE
from shared.model.config import TargetConfig


@dataclass(frozen=True, slots=True)
class BootstrapFile:
    """A file (its name in the folder) and its bytes for a GitTarget (None: not wanted)."""

    name: str
    content: Callable[[TargetConfig], bytes | None]


def _placed(target: TargetConfig) -> str:
    """Where new objects go, as the README says it."""
    if target.placement.templated:
        return (
            "A new object is written where the GitTarget's `spec.placement` templates say.\n"
            "  An object already here is found"
        )
    return (
        "A new object is written to `<namespace>/<group>/<resource>/<name>.yaml` (no group"
        " segment\n  for the core group, `_cluster` for cluster-scoped objects). An object"
        " already here is found"
    )


def readme(target: TargetConfig) -> bytes:
    """What this folder is, who writes it and how to edit it (docs/writing.md in short)."""
    where = target.path.strip("/") or "the repository root"
    return f"""# Written by gitops-reverser

This folder ({where}) is a mirror of Kubernetes objects, kept by gitops-reverser for the
GitTarget `{target.namespace}/{target.name}`: every edit made through the Kubernetes API
becomes a commit here, as clean YAML.

- {_placed(target)}
  by its identity wherever its file is, so you may move and rename files.
- You may edit these files: an update from the API edits your file in place, keeping your
  comments, key order, quoting and the other documents of the file; only the fields the API
  changed change, and a field the API object lacks is removed (the API value wins).
- Files that are neither Kubernetes manifests nor documentation make gitops-reverser refuse to
  write here (the GitTarget says why in its `GitPathAccepted` condition). List such files in
  `{IGNORE_FILE}` (gitignore syntax) and they are left alone.
""".encode()


GITTARGETIGNORE = b"""# Paths of this folder that gitops-reverser leaves alone, in gitignore syntax,
# relative to this folder. An ignored file is neither written nor read: it may hold
# anything.
# A pattern that hides a file gitops-reverser writes (such as *.yaml, or a namespace's
# folder it mirrors) makes it refuse the folder with IgnoreShadowsManagedPath.
#
# Examples:
# notes/
# *.draft.yaml
# !keep-this.draft.yaml
"""

#: The files staged with a folder's first object, in this order.
BOOTSTRAP_FILES: tuple[BootstrapFile, ...] = (
    BootstrapFile("README.md", readme),
    BootstrapFile(IGNORE_FILE, lambda _target: GITTARGETIGNORE),
)
