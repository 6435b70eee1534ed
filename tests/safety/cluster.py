"""The cluster side of a schedule: API objects, the watcher's pipe, and Flux.

Objects are ConfigMaps whose one value is unique per change, so every value names the change
that made it (an API edit, an outside push). The watcher's pipe holds events observed but not
yet published to the branch's stream (a watcher that is slow or down). Flux is the source- and
kustomize-controller pair of ``../shared/facts/appliers.md`` reduced to what the core promise
needs: a source stamp fetches the tip and a new artifact wakes the Kustomization; a
Kustomization stamp applies the artifact again; the apply sets ``lastAttemptedRevision`` first,
applies objects one by one, and sets ``lastHandledReconcileAt`` at the end.

Each object keeps ``metadata.managedFields`` as the API server does, computed by the sandbox's
own double (``sandbox/kube/managed.py``: one entry per manager, ``time`` at one-second
resolution, a write taking the fields it changes from every other entry) and Flux's
``cleanupMetadata`` (``sandbox/flux/drift.py``: ``kubectl*`` managers handed to
``kustomize-controller``), so every event carries the newest entries the product's apply window
reads (``shared.model.events.latest_managers``). An API edit is an Update by ``kubectl-edit``
or by ``console``, a manager Flux's cleanup leaves alone that also sets an annotation of its
own (so its entry outlives Flux taking ``data.v`` back, and a same-second apply is a tie, W2);
a Flux apply is a forced server-side apply by ``kustomize-controller`` of ``data.v`` and its
two owner labels. The published body stays the sanitised ``data.v`` alone: the labels and the
annotation stand for fields the race does not depend on.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sandbox.flux.drift import merged_managed_fields
from sandbox.kube.managed import record_update, server_side_apply
from shared.decide.placement import canonical_path
from shared.model.events import GitTargetRef, ObjectEvent, latest_managers
from shared.model.ids import GitTargetUid, ObjectId
from shared.model.manifest import parse, render

NAMESPACE = "team"
FOLDER = "apps"
NAMES = ("a", "b")
TARGET = GitTargetRef(GitTargetUid("gt-1"), NAMESPACE, "gt")
#: The field managers of the cluster's writers (facts: appliers.md F3 for Flux's).
FLUX_MANAGER = "kustomize-controller"
KUBECTL = "kubectl-edit"
CONSOLE = "console"
#: Flux's owner labels, applied with every object (what keeps its entry after an API edit).
FLUX_LABELS = {
    "kustomize.toolkit.fluxcd.io/name": "apps",
    "kustomize.toolkit.fluxcd.io/namespace": NAMESPACE,
}
CONSOLE_ANNOTATION = "example.com/edited-with"


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


def _time(now: float) -> datetime:
    return datetime.fromtimestamp(now, tz=UTC)


def flux_config(name: str, value: str) -> dict[str, Any]:
    """What kustomize-controller applies for the object at ``value``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": dict(FLUX_LABELS)},
        "data": {"v": value},
    }


def flux_create(name: str, value: str, now: float) -> dict[str, Any]:
    """The object as the installation finds it: applied by Flux."""
    obj = server_side_apply(
        None,
        flux_config(name, value),
        manager=FLUX_MANAGER,
        force=True,
        api_version="v1",
        now=_time(now),
    )
    obj["metadata"]["uid"] = meta(name)["uid"]
    return obj


def api_update(obj: dict[str, Any], value: str, manager: str, now: float) -> dict[str, Any]:
    """``obj`` after an API edit by ``manager`` (an Update) sets ``data.v`` to ``value``."""
    new = copy.deepcopy(obj)
    new["data"]["v"] = value
    if manager == CONSOLE:
        new["metadata"].setdefault("annotations", {})[CONSOLE_ANNOTATION] = CONSOLE
    new["metadata"]["managedFields"] = record_update(
        obj, new, manager=manager, api_version="v1", now=_time(now)
    )
    return new


def flux_cleanup(obj: dict[str, Any]) -> dict[str, Any] | None:
    """``obj`` after ``cleanupMetadata``'s patch, or None when there is nothing to clean."""
    merged = merged_managed_fields(obj["metadata"].get("managedFields") or [])
    if merged is None:
        return None
    new = copy.deepcopy(obj)
    new["metadata"]["managedFields"] = merged
    return new


def flux_apply(obj: dict[str, Any], value: str, now: float) -> dict[str, Any]:
    """``obj`` after kustomize-controller's forced server-side apply of ``data.v = value``."""
    new = server_side_apply(
        obj,
        flux_config(obj["metadata"]["name"], value),
        manager=FLUX_MANAGER,
        force=True,
        api_version="v1",
        now=_time(now),
    )
    return new


@dataclass(slots=True)
class Live:
    """An object's value in the cluster, who set it last, and the whole live object."""

    value: str
    by: str  # "api" or "flux"
    at: int  # the world's logical moment of the change
    obj: dict[str, Any] = field(default_factory=dict)
    rv: str = ""  # resourceVersion: the value, or the value and a count for metadata writes

    def __post_init__(self) -> None:
        self.rv = self.rv or self.value


@dataclass(slots=True)
class Flux:
    """The Flux doubles' state for one Kustomization and its GitRepository."""

    artifact: str  # the GitRepository's artifact commit
    source_stamp: str | None = None  # a requestedAt the source has not handled
    kustomization_stamp: str | None = None
    source_handled: str = ""  # GitRepository status.lastHandledReconcileAt
    handled_at: str = ""  # Kustomization status.lastHandledReconcileAt
    attempted: str = ""  # Kustomization status.lastAttemptedRevision (a commit)
    applying: str | None = None  # the commit being applied
    apply_token: str = ""  # the stamp this apply answers
    cause: str = ""  # the token whose stamp started this apply ("" for none)
    todo: list[str] = field(default_factory=list)
    due: float = 0.0  # the clock at which the apply may take its first object


@dataclass(slots=True)
class Watcher:
    """Events observed and not yet published to the stream, oldest first."""

    pipe: list[ObjectEvent] = field(default_factory=list)

    def observe(self, live: Live) -> None:
        """The watch saw the object change (``observed_at`` is set when it is published: the
        real watcher stamps an event when it handles it, services/watcher/emit.py)."""
        name = live.obj["metadata"]["name"]
        self.pipe.append(
            ObjectEvent(
                target=TARGET,
                operation="UPDATE",
                object_id=object_id(name),
                uid=meta(name)["uid"],
                resource_version=live.rv,
                body=body(name, live.value),
                managers=latest_managers(live.obj["metadata"]["managedFields"]),
                observed_at=0.0,
            )
        )
