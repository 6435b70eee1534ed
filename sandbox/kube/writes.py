"""Create, update and delete, with the generic registry's order of checks.

Create: namespace must exist (NamespaceLifecycle admission: 404 ``namespaces "x" not
found``, 403 while it terminates), defaulting, validation, then 409 AlreadyExists. Update:
404 unless the kind creates on update, name must match the URL, resourceVersion checked (a
missing one is an unconditional update only where the strategy allows it, else 422), the
status subresource split, validation, generation, managedFields, and a write that changes
nothing but managedFields timestamps stores nothing. Delete: preconditions, finalizers mark
the object deleting first, the last finalizer removed deletes it (generic registry store.go).
All of it runs under the store lock, so each write is atomic.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sandbox.kube import guards, managed, objects
from sandbox.kube.builtin_defaults import apply_defaults, status_on_create
from sandbox.kube.errors import (
    already_exists,
    bad_request,
    forbidden,
    internal,
    not_found,
)
from sandbox.kube.events import to_core
from sandbox.kube.resources import ResourceType
from sandbox.kube.store import Store
from sandbox.kube.validation import check_builtin_decoding, check_object, strict_error

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class WriteContext:
    """Who writes what where: the resource, namespace, subresource and request options."""

    rtype: ResourceType
    namespace: str
    manager: str
    mode: str = "Warn"
    dry_run: bool = False
    subresource: str = ""


@dataclass(slots=True)
class WriteResult:
    """The object to answer with, its HTTP code, and Warning headers."""

    obj: Obj
    code: int = 200
    warnings: list[str] = field(default_factory=list)


class Writer:
    """Every state change of one API server."""

    def __init__(self, store: Store, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock

    # ---- create -------------------------------------------------------------------------

    def create(self, ctx: WriteContext, body: Obj, applied: bool = False) -> WriteResult:
        """POST: a new object (201), or 409 when the name is taken."""
        obj = self._normalise_body(ctx, body)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise internal("resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = objects.generate_name(meta["generateName"])
        with self._store.locked():
            self._require_namespace(ctx, meta.get("name", ""))
            return self._create_locked(ctx, obj, body, applied)

    def _create_locked(self, ctx: WriteContext, obj: Obj, body: Obj, applied: bool) -> WriteResult:
        rtype, now = ctx.rtype, self._clock()
        obj = apply_defaults(rtype, obj)
        status_on_create(rtype, obj)
        objects.fill_create_fields(rtype, obj, now)
        outcome = check_object(rtype, obj, None, ctx.mode)
        if outcome.unknown_fields:
            raise strict_error(rtype, body, outcome.unknown_fields)
        obj = outcome.obj
        if self._store.get(rtype.group_resource, _key(obj)) is not None:
            raise already_exists(rtype.plural, rtype.group, obj["metadata"]["name"])
        if not applied:
            obj["metadata"]["managedFields"] = self._record(ctx, None, obj, now)
        if not ctx.dry_run:
            obj = self._store.put(rtype.group_resource, obj)
        return WriteResult(obj, 201, outcome.warnings)

    def _normalise_body(self, ctx: WriteContext, body: Obj) -> Obj:
        rtype = ctx.rtype
        if not isinstance(body, dict):
            raise bad_request("the object provided is unrecognized")
        check_builtin_decoding(rtype, body)
        obj = copy.deepcopy(body)
        guards.check_type(rtype, obj)
        obj = to_core(obj)
        meta = obj.setdefault("metadata", {})
        if meta is None:
            meta = obj["metadata"] = {}
        guards.check_namespace(rtype, meta, ctx.namespace)
        return obj

    def _require_namespace(self, ctx: WriteContext, name: str) -> None:
        if not ctx.rtype.namespaced:
            return
        ns = self._store.get(("", "namespaces"), ("", ctx.namespace))
        if ns is None:
            raise not_found("namespaces", "", ctx.namespace)
        if "deletionTimestamp" in ns["metadata"]:
            why = (
                f"unable to create new content in namespace {ctx.namespace} "
                "because it is being terminated"
            )
            raise forbidden(ctx.rtype.plural, ctx.rtype.group, name, why)

    # ---- update -------------------------------------------------------------------------

    def update(self, ctx: WriteContext, name: str, body: Obj) -> WriteResult:
        """PUT: replace the object (or its status), with optimistic concurrency."""
        obj = self._normalise_body(ctx, body)
        guards.check_name(obj, name)
        with self._store.locked():
            old = self._store.get(ctx.rtype.group_resource, (ctx.namespace, name))
            if old is None:
                return self._create_on_update(ctx, obj, body, name)
            guards.check_resource_version(ctx.rtype, obj, old)
            return self.replace_locked(ctx, old, obj, body)

    def _create_on_update(self, ctx: WriteContext, obj: Obj, body: Obj, name: str) -> WriteResult:
        if not ctx.rtype.create_on_update or ctx.subresource:
            raise not_found(ctx.rtype.plural, ctx.rtype.group, name)
        obj["metadata"].pop("resourceVersion", None)
        self._require_namespace(ctx, name)
        return self._create_locked(ctx, obj, body, False)

    def replace_locked(
        self, ctx: WriteContext, old: Obj, obj: Obj, body: Obj, applied: bool = False
    ) -> WriteResult:
        """The update pipeline once ``obj`` is the intended new state (store lock held)."""
        rtype, now = ctx.rtype, self._clock()
        new = self._split_status(ctx, to_core(obj), old)
        objects.keep_system_fields(new, old)
        new = apply_defaults(rtype, new)
        outcome = check_object(rtype, new, old, ctx.mode)
        if outcome.unknown_fields:
            raise strict_error(rtype, body, outcome.unknown_fields)
        new = outcome.obj
        if not ctx.subresource:  # the status strategy never moves generation
            objects.bump_generation(rtype, new, old)
        guards.check_finalizers(rtype, new, old)
        if not applied:
            new["metadata"]["managedFields"] = self._record(ctx, old, new, now)
        return self._store_update(ctx, new, old, outcome.warnings)

    @staticmethod
    def _record(ctx: WriteContext, old: Obj | None, new: Obj, now: datetime) -> list[Obj]:
        """managedFields after this write; status is reset on main writes (GetResetFields)."""
        if ctx.rtype.status_subresource and not ctx.subresource:
            old = _without_status(old) if old is not None else None
            new = _without_status(new)
        return managed.record_update(
            old,
            new,
            manager=ctx.manager,
            api_version=ctx.rtype.api_version,
            now=now,
            subresource=ctx.subresource or None,
        )

    def _split_status(self, ctx: WriteContext, obj: Obj, old: Obj) -> Obj:
        if ctx.subresource == "status":
            result = objects.status_only(obj, old)
            result["metadata"]["managedFields"] = obj["metadata"].get("managedFields")
            return result
        new = copy.deepcopy(obj)
        objects.keep_status(ctx.rtype, new, old)
        return new

    def _store_update(
        self, ctx: WriteContext, new: Obj, old: Obj, warnings: list[str]
    ) -> WriteResult:
        if objects.same_content(new, old):
            return WriteResult(old, 200, warnings)
        if ctx.dry_run:
            return WriteResult(new, 200, warnings)
        meta = new["metadata"]
        if "deletionTimestamp" in meta and not meta.get("finalizers"):
            self._remove(ctx.rtype, new)
            return WriteResult(new, 200, warnings)
        return WriteResult(self._store.put(ctx.rtype.group_resource, new), 200, warnings)

    # ---- delete -------------------------------------------------------------------------

    def delete(self, ctx: WriteContext, name: str, options: Mapping[str, Any]) -> WriteResult:
        """DELETE: finalizers first mark the object deleting; otherwise it goes at once."""
        rtype = ctx.rtype
        with self._store.locked():
            old = self._store.get(rtype.group_resource, (ctx.namespace, name))
            if old is None:
                raise not_found(rtype.plural, rtype.group, name)
            guards.check_preconditions(rtype, old, options.get("preconditions") or {})
            if "deletionTimestamp" in old["metadata"]:
                return WriteResult(old)
            if old["metadata"].get("finalizers") or (rtype.kind, rtype.group) == ("Namespace", ""):
                return self._mark_deleting(ctx, old)
            if ctx.dry_run:
                return WriteResult(self._deleted_answer(rtype, old))
            return WriteResult(self._deleted_answer(rtype, self._remove(rtype, old)))

    def _mark_deleting(self, ctx: WriteContext, old: Obj) -> WriteResult:
        new = objects.mark_deleting(old, self._clock())
        if ctx.rtype.kind == "Namespace":
            new.setdefault("status", {})["phase"] = "Terminating"
        if ctx.dry_run:
            return WriteResult(new)
        stored = self._store.put(ctx.rtype.group_resource, new)
        if ctx.rtype.kind == "Namespace":
            self._empty_namespace(old["metadata"]["name"])
        return WriteResult(stored)

    def _remove(self, rtype: ResourceType, obj: Obj) -> Obj:
        gone = self._store.remove(rtype.group_resource, obj)
        namespace = obj["metadata"].get("namespace")
        if namespace:
            self._finish_namespace(namespace)
        return gone

    def _deleted_answer(self, rtype: ResourceType, obj: Obj) -> Obj:
        if rtype.return_deleted_object:
            return obj
        details: Obj = {"name": obj["metadata"]["name"]}
        if rtype.group:
            details["group"] = rtype.group
        details.update(kind=rtype.plural, uid=obj["metadata"]["uid"])
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    # ---- namespace lifecycle (what the namespace controller does) ------------------------

    def _empty_namespace(self, namespace: str) -> None:
        for resource, obj in self._store.namespaced_objects(namespace):
            if "deletionTimestamp" in obj["metadata"]:
                continue
            if obj["metadata"].get("finalizers"):
                self._store.put(resource, objects.mark_deleting(obj, self._clock()))
            else:
                self._store.remove(resource, obj)
        self._finish_namespace(namespace)

    def _finish_namespace(self, namespace: str) -> None:
        ns = self._store.get(("", "namespaces"), ("", namespace))
        if ns is None or "deletionTimestamp" not in ns["metadata"]:
            return
        if not self._store.namespaced_objects(namespace):
            self._store.remove(("", "namespaces"), ns)


def _without_status(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k != "status"}


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])
