"""From a watched object to the ObjectEvent its branch receives (M1, M2, M10).

Pure functions: which operation a watch event is, what the event carries, and what the watch
remembers about the object. An object with a ``deletionTimestamp`` is a DELETE at once
(deletion is the intent; the finalizer updates that follow must not write the file back).
A Secret travels as its identity only: no ``data`` ever reaches Redis, and the branch
worker refuses it (M10); or, for a GitTarget with ``spec.encryption``, sealed as a SOPS
document (ciphertext only) that the branch worker writes (P3). An event of a rule with
``ignoreDifferences`` names the fields whose value in Git is kept (issue 27.13).
"""

from __future__ import annotations

from typing import Any

from services.watcher.encryption import Sealer
from shared.decide.apply_window import Newest
from shared.decide.differences import owned_pointers
from shared.decide.watches import WatchSpec
from shared.kube.kinds import is_sensitive
from shared.model.events import Listing, ObjectEvent, Operation, latest_managers
from shared.model.ids import ObjectId
from shared.model.manifest import sanitise
from shared.store.watches import KnownObject

Obj = dict[str, Any]
_BY_WATCH_TYPE: dict[str, Operation] = {
    "ADDED": "CREATE",
    "MODIFIED": "UPDATE",
    "DELETED": "DELETE",
}


def _meta(obj: Obj) -> Obj:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def name_of(obj: Obj) -> str:
    """The object's name."""
    return str(_meta(obj).get("name", ""))


def operation_of(watch_type: str, obj: Obj) -> Operation | None:
    """The operation a watch event means (None for BOOKMARK and anything unknown)."""
    operation = _BY_WATCH_TYPE.get(watch_type)
    if operation is not None and _meta(obj).get("deletionTimestamp"):
        return "DELETE"
    return operation


def listed_operation(obj: Obj, known: bool) -> Operation:
    """The operation a listed object means: new to the watch, seen before, or being deleted."""
    if _meta(obj).get("deletionTimestamp"):
        return "DELETE"
    return "UPDATE" if known else "CREATE"


def known_object(spec: WatchSpec, obj: Obj) -> KnownObject:
    """What the watch remembers about an object it has seen."""
    meta = _meta(obj)
    return KnownObject(
        str(meta.get("uid", "")),
        spec.resource.kind,
        spec.resource.version,
        str(meta.get("resourceVersion", "")),
    )


def _body(spec: WatchSpec, obj: Obj, sealer: Sealer | None) -> Obj:
    if spec.recipients and sealer is not None:
        clean = sanitise({**obj, "apiVersion": obj.get("apiVersion") or spec.resource.api_version})
        return sealer.seal(clean, spec.recipients, spec.key.uid)
    if spec.sensitive or is_sensitive(spec.resource):
        meta = _meta(obj)
        identity = {"name": meta.get("name"), "namespace": meta.get("namespace")}
        return {
            "apiVersion": spec.resource.api_version,
            "kind": spec.resource.kind,
            "metadata": identity,
        }
    return sanitise({**obj, "apiVersion": obj.get("apiVersion") or spec.resource.api_version})


def newest_of(obj: Obj) -> Newest | None:
    """``obj``'s newest ``managedFields`` entries (W2: the watch's order decides a tie)."""
    meta = _meta(obj)
    managed = meta.get("managedFields")
    entries = latest_managers(managed if isinstance(managed, list) else None)
    return Newest.of(str(meta.get("uid", "")), entries)


def object_event(
    spec: WatchSpec, operation: Operation, obj: Obj, now: float, sealer: Sealer | None = None
) -> ObjectEvent:
    """The event for one observed change of ``obj`` (a Secret sealed by ``sealer`` when its
    GitTarget encrypts, P3)."""
    meta = _meta(obj)
    res = spec.resource
    managed = meta.get("managedFields")
    return ObjectEvent(
        target=spec.target,
        operation=operation,
        object_id=ObjectId(
            res.group, res.version, res.resource, res.kind, spec.key.namespace, name_of(obj)
        ),
        uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")),
        body=None if operation == "DELETE" else _body(spec, obj, sealer),
        managers=latest_managers(managed if isinstance(managed, list) else None),
        observed_at=now,
        sensitive=spec.sensitive or is_sensitive(res),
        ignored=ignored_pointers(spec, operation, obj),
    )


def ignored_pointers(spec: WatchSpec, operation: Operation, obj: Obj) -> tuple[str, ...]:
    """The fields of ``obj`` whose value in Git is kept (the rules' ignoreDifferences): its
    JSON pointers, and the fields its managers own in ``managedFields``. None for a DELETE or
    for an object that travels sealed or as its identity only."""
    ignore = spec.ignore
    if not ignore or operation == "DELETE" or spec.recipients or spec.sensitive:
        return ()
    if is_sensitive(spec.resource):
        return ()
    managed = _meta(obj).get("managedFields")
    owned = owned_pointers(managed if isinstance(managed, list) else None, ignore.managers, obj)
    return tuple(dict.fromkeys((*ignore.json_pointers, *owned)))


def swept_event(
    spec: WatchSpec, name: str, known: KnownObject, resource_version: str, now: float
) -> ObjectEvent:
    """The DELETE of an object a relist no longer shows (``prune.mode: Always``)."""
    res = spec.resource
    return ObjectEvent(
        target=spec.target,
        operation="DELETE",
        object_id=ObjectId(
            res.group, known.version, res.resource, known.kind, spec.key.namespace, name
        ),
        uid=known.uid,
        resource_version=resource_version,
        body=None,
        managers=(),
        observed_at=now,
        sensitive=spec.sensitive or is_sensitive(res),
    )


def listing_of(spec: WatchSpec, present: dict[str, KnownObject], now: float) -> Listing:
    """The names a list without a cursor found, for the branch worker's folder check (D2)."""
    res = spec.resource
    return Listing(
        target=spec.target,
        resource=ObjectId(res.group, res.version, res.resource, res.kind, spec.key.namespace, ""),
        names=frozenset(present),
        observed_at=now,
    )
