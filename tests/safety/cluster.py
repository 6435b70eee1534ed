"""The cluster side of a schedule: API objects, the watcher's pipe, and Flux.

Objects are ConfigMaps whose one value is unique per change, so every value names the change
that made it (an API edit, an outside push). The watcher's pipe holds events observed but not
yet published to the branch's stream (a watcher that is slow or down). Flux is the source- and
kustomize-controller pair of ``../shared/facts/appliers.md`` reduced to what the core promise
needs: a source stamp fetches the tip and a new artifact wakes the Kustomization; a
Kustomization stamp applies the artifact again; the apply sets ``lastAttemptedRevision`` first,
applies objects one by one, and sets ``lastHandledReconcileAt`` at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.decide.placement import canonical_path
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.manifest import parse, render

NAMESPACE = "team"
FOLDER = "apps"
NAMES = ("a", "b")
TARGET = GitTargetRef(GitTargetUid("gt-1"), NAMESPACE, "gt")


def object_id(name: str) -> ObjectId:
    """A ConfigMap of the tenant's namespace."""
    return ObjectId("", "v1", "configmaps", "ConfigMap", NAMESPACE, name)


def meta(name: str) -> dict[str, str]:
    """The object's metadata that never changes (its uid: objects are never recreated)."""
    return {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"}


def body(name: str, value: str) -> dict[str, Any]:
    """The object as the watcher publishes it (already sanitised)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"v": value},
    }


def path_of(name: str) -> str:
    """Where the branch worker writes the object (M4's canonical path)."""
    return canonical_path(FOLDER, object_id(name))


_PARSED: dict[bytes, str | None] = {}


def value_in(tree: dict[str, bytes], name: str) -> str | None:
    """The object's value in a Git tree (None when absent)."""
    data = tree.get(path_of(name))
    if data is None:
        return None
    if data not in _PARSED:
        docs = parse(data)
        _PARSED[data] = str(docs[0]["data"]["v"]) if docs else None
    return _PARSED[data]


def document(name: str, value: str) -> bytes:
    """The file an outside push writes for the object."""
    return render(body(name, value))


@dataclass(slots=True)
class Live:
    """An object's value in the cluster and who set it last."""

    value: str
    by: str  # "api" or "flux"
    at: int  # the world's logical moment of the change


@dataclass(slots=True)
class Flux:
    """The Flux doubles' state for one Kustomization and its GitRepository."""

    artifact: str  # the GitRepository's artifact commit
    source_stamp: str | None = None  # a requestedAt the source has not handled
    kustomization_stamp: str | None = None
    handled_at: str = ""  # Kustomization status.lastHandledReconcileAt
    attempted: str = ""  # Kustomization status.lastAttemptedRevision (a commit)
    applying: str | None = None  # the commit being applied
    apply_token: str = ""  # the stamp this apply answers
    cause: str = ""  # the token whose stamp started this apply ("" for none)
    todo: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Watcher:
    """Events observed and not yet published to the stream, oldest first."""

    pipe: list[ObjectEvent] = field(default_factory=list)

    def observe(self, name: str, value: str, manager: str, now: float) -> None:
        """The watch saw the object change."""
        operation = "Update" if manager == "kubectl" else "Apply"
        self.pipe.append(
            ObjectEvent(
                target=TARGET,
                operation="UPDATE",
                object_id=object_id(name),
                uid=meta(name)["uid"],
                resource_version=value,
                body=body(name, value),
                managers=(ManagerEntry(manager, operation, str(int(now))),),
                observed_at=now,
            )
        )
