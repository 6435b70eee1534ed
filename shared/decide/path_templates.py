"""Where a new object's file goes under a GitTarget's placement templates (issue 27.6).

``new_file`` renders the object's template (``shared.model.placement``) or, without one, gives
today's canonical path (M4), so a GitTarget without ``spec.placement`` keeps its layout to the
byte. Values are the object's identity: ``{namespace}`` is ``_cluster`` for a cluster-scoped
object unless the template gives a fallback, ``{group}`` is empty for the core group (an empty
segment is dropped: ``{group}/{resource}`` is ``configmaps`` there), ``{name}`` is shortened as
the canonical file name is. ``{label:KEY|FALLBACK}`` is the object's label, or the fallback; a
label missing without one refuses the write. Only a new object is placed: one the folder holds
already is found by identity wherever its file is (M4), so a changed label never moves a file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shared.decide.placement import (
    CLUSTER_SEGMENT,
    PlacementRefused,
    canonical_path,
    file_name,
    inside,
)
from shared.model.ids import ObjectId
from shared.model.placement import FIELD, Placement

#: The refusal of a write whose path another object's document holds.
PATH_COLLISION = "PathCollision"
#: The refusal of a write the placement cannot place (a label missing without a fallback).
UNPLACEABLE = "PlacementUnresolved"


def _values(oid: ObjectId) -> dict[str, str]:
    return {
        "group": oid.group,
        "version": oid.version,
        "resource": oid.resource,
        "namespace": oid.namespace,
        "name": file_name(oid.name).removesuffix(".yaml"),
    }


def render(template: str, oid: ObjectId, labels: Mapping[str, str]) -> str:
    """The template's path for ``oid`` (relative to the folder); raises PlacementRefused."""
    values = _values(oid)

    def one(found: re.Match[str]) -> str:
        name, fallback = found.group(1), found.group(2)
        if name.startswith("label:"):
            key = name.removeprefix("label:")
            value = labels.get(key, "")
            if value:
                return value
            if fallback is None:
                raise PlacementRefused(
                    f"{oid.kind} {oid.name} has no label {key} and the template "
                    f"{template!r} gives no fallback ({{label:{key}|FALLBACK}})"
                )
            return fallback
        value = values[name]
        if not value and name == "namespace" and fallback is None:
            return CLUSTER_SEGMENT
        return value or (fallback or "")

    rendered = FIELD.sub(one, template)
    return "/".join(segment for segment in rendered.split("/") if segment)


def new_file(folder: str, placement: Placement, oid: ObjectId, labels: Mapping[str, str]) -> str:
    """The path of a new object's file; raises PlacementRefused for one that cannot be placed
    or would leave ``folder``."""
    template = placement.template_for(oid.group, oid.resource)
    if not template:
        return canonical_path(folder, oid)
    return inside(folder, render(template, oid, labels))


def collision_message(path: str, new: str, held: list[str]) -> str:
    """``GitPathAccepted=False``'s message: the path and both objects."""
    return (
        f"{new} and {', '.join(held)} both map to {path}; neither is overwritten "
        "(spec.placement gives them one path: add {name} or {resource} to the template)"
    )
