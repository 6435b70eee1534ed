"""The path of an object new to a GitTarget's folder, or why it gets none (issue 27.6).

Without ``spec.placement`` this is the canonical path (M4), as before. With templates, a path
that already holds a file of other objects is refused (``PathCollision``, shown as
``GitPathAccepted=False`` naming both) and the file is left as it is: two objects a template
maps to one path would otherwise overwrite each other in turn.
"""

from __future__ import annotations

from typing import Any

from services.branch_worker.folder import identity
from shared.decide.path_templates import PATH_COLLISION, collision_message, new_file
from shared.decide.placement import PlacementRefused
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.model.manifest import parse
from shared.model.sops import SEALED_SUFFIX, is_sealed


class Unplaced(Exception):
    """A new object that gets no path: ``reason`` and message for its refusal."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def labels_of(body: dict[str, Any] | None) -> dict[str, str]:
    """The object's labels (none for a body without them)."""
    meta = (body or {}).get("metadata")
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def path_for(target: TargetConfig, event: ObjectEvent) -> str:
    """Where the event's object goes when the folder does not hold it; raises
    PlacementRefused (a path outside the folder, a label without a fallback)."""
    path = new_file(target.path, target.placement, event.object_id, labels_of(event.body))
    if event.body is not None and is_sealed(event.body) and path.endswith(".yaml"):
        path = path.removesuffix(".yaml") + SEALED_SUFFIX
    return path


def place(workspace: Workspace, target: TargetConfig, event: ObjectEvent) -> str:
    """``path_for``, refusing a templated path another file holds; raises Unplaced."""
    try:
        path = path_for(target, event)
    except PlacementRefused as err:
        raise Unplaced("PathOutsideTarget", str(err)) from err
    if not target.placement.templated:
        return path
    held = workspace.read(path)
    if held is None:
        return path
    oid = event.object_id
    new = f"{oid.kind} {oid.namespace}/{oid.name}".replace(" /", " ")
    raise Unplaced(PATH_COLLISION, collision_message(path, new, _names(held)))


def _names(data: bytes) -> list[str]:
    """The objects a file holds, as a person reads them (the file itself when none parse)."""
    try:
        docs = parse(data)
    except Exception:  # a file nobody can parse is still a file the write would overwrite
        return ["a file that is not a manifest"]
    keys = [identity(doc) for doc in docs]
    named = [f"{k[1]} {k[2]}/{k[3]}".replace(" /", " ") for k in keys if k is not None]
    return named or ["a file that is not a manifest"]
