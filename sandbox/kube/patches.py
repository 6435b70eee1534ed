"""PATCH by Content-Type: JSON merge, JSON patch, strategic merge, and server-side apply.

The order of checks is the patch handler's (apiserver pkg/endpoints/handlers/patch.go):
an unsupported Content-Type is 415 before anything is read (strategic merge is not served
for custom resources); PatchOptions are validated next (apimachinery meta/v1/validation
``ValidatePatchOptions``: apply needs a ``fieldManager``, ``force`` only goes with apply, both
422); then a missing object is 404, except for apply, which creates it. The patched object
then goes through the same update pipeline as a PUT.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import yaml

from sandbox.kube import managed, patching
from sandbox.kube.errors import ApiError, Cause, bad_request, conflict, invalid, not_found
from sandbox.kube.objects import in_version
from sandbox.kube.store import Store
from sandbox.kube.validation import StrictDecodingError, strict_patch_error
from sandbox.kube.writes import WriteContext, Writer, WriteResult

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

Obj = dict[str, Any]


def accepted_types(custom: bool) -> list[str]:
    """Patch media types a resource accepts, in the order the server lists them."""
    if custom:
        return [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    return [JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH]


def _options_error(field: str, reason: str, message: str) -> ApiError:
    return invalid("PatchOptions", "meta.k8s.io", "", [Cause(field, reason, message)])


def check_patch_options(content_type: str, field_manager: str | None, force: str | None) -> None:
    """422 for an apply without fieldManager, or force on a non-apply patch."""
    if content_type == APPLY_PATCH and not field_manager:
        raise _options_error(
            "fieldManager", "FieldValueRequired", "Required value: is required for apply patch"
        )
    if content_type != APPLY_PATCH and force is not None:
        raise _options_error(
            "force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch"
        )


def _decode(content_type: str, raw: bytes) -> Any:
    try:
        if content_type == APPLY_PATCH:
            return yaml.safe_load(raw.decode("utf-8"))
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding patch: {exc}") from None


def _patched(content_type: str, current: Obj, patch: Any, kind: str) -> Obj:
    try:
        if content_type == JSON_PATCH:
            if not isinstance(patch, list):
                raise bad_request(
                    "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
                )
            return patching.json_patch(current, patch)
        if not isinstance(patch, dict):
            raise bad_request("the patch is not a JSON object")
        if content_type == STRATEGIC_PATCH:
            return patching.strategic_merge_patch(current, patch, kind)
        return patching.merge_patch(current, patch)
    except patching.PatchError as exc:
        raise ApiError(exc.status, exc.reason, exc.message) from None


class Patcher:
    """Turns a PATCH request into an update (or, for apply, maybe a create)."""

    def __init__(self, writer: Writer, store: Store, clock: Callable[[], datetime]) -> None:
        self._writer = writer
        self._store = store
        self._clock = clock

    def patch(
        self, ctx: WriteContext, name: str, content_type: str, raw: bytes, force: bool
    ) -> WriteResult:
        """Apply one patch request to ``name``."""
        patch = _decode(content_type, raw)
        with self._store.locked():
            old = self._store.get(ctx.rtype.group_resource, (ctx.namespace, name))
            if content_type == APPLY_PATCH:
                return self._apply(ctx, name, old, patch, force)
            if old is None:
                raise not_found(ctx.rtype.plural, ctx.rtype.group, name)
            current = in_version(old, ctx.rtype)
            obj = _patched(content_type, current, patch, ctx.rtype.kind)
            return self._replace(ctx, old, obj, patch)

    def _replace(self, ctx: WriteContext, old: Obj, obj: Obj, patch: Any) -> WriteResult:
        meta = obj.setdefault("metadata", {})
        given = meta.get("resourceVersion")
        if given and given != old["metadata"]["resourceVersion"]:
            raise conflict(ctx.rtype.plural, ctx.rtype.group, old["metadata"]["name"])
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        try:
            return self._writer.replace_locked(ctx, old, obj, obj)
        except StrictDecodingError as exc:
            raise strict_patch_error(obj, exc.unknown) from None

    def _apply(
        self, ctx: WriteContext, name: str, old: Obj | None, applied: Any, force: bool
    ) -> WriteResult:
        if not isinstance(applied, dict):
            raise bad_request("error decoding patch: the apply patch is not an object")
        _check_applied(ctx, name, applied, old)
        if ctx.rtype.status_subresource and ctx.subresource != "status":
            applied = {k: v for k, v in applied.items() if k != "status"}
        if old is None:
            if ctx.subresource:
                raise not_found(ctx.rtype.plural, ctx.rtype.group, name)
            return self._writer.create(ctx, self._merge(ctx, None, applied, force), applied=True)
        obj = self._merge(ctx, in_version(old, ctx.rtype), applied, force)
        obj.setdefault("metadata", {})["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._writer.replace_locked(ctx, old, obj, applied, applied=True)

    def _merge(self, ctx: WriteContext, live: Obj | None, applied: Obj, force: bool) -> Obj:
        """The object after this apply, managedFields included (managed.server_side_apply)."""
        try:
            return managed.server_side_apply(
                live,
                applied,
                manager=ctx.manager,
                force=force,
                api_version=ctx.rtype.api_version,
                now=self._clock(),
            )
        except managed.ApplyConflict as exc:
            body = exc.status_body()
            raise ApiError(409, "Conflict", body["message"], body["details"]) from None
        except patching.PatchError as exc:
            raise ApiError(exc.status, exc.reason, exc.message) from None


def _check_applied(ctx: WriteContext, name: str, applied: Obj, old: Obj | None) -> None:
    rtype = ctx.rtype
    given_rv = (applied.get("metadata") or {}).get("resourceVersion")
    if given_rv and (old is None or given_rv != old["metadata"]["resourceVersion"]):
        raise conflict(rtype.plural, rtype.group, name)
    if applied.get("apiVersion") != rtype.api_version or applied.get("kind") != rtype.kind:
        raise bad_request(
            f"error decoding patch: the apply configuration must carry apiVersion "
            f"{rtype.api_version!r} and kind {rtype.kind!r}"
        )
    given = (applied.get("metadata") or {}).get("name")
    if given != name:
        raise bad_request(
            f"the name of the object ({given or ''}) does not match the name on the URL ({name})"
        )
