"""Checks a write must pass before it changes anything, worded as kube-apiserver words them.

The body must name the URL's kind, apiVersion, namespace and name (apiserver handlers
``checkName``, ``EnsureObjectNamespaceMatchesRequestNamespace``); an update's
resourceVersion must be current, and a missing one is allowed only where the strategy allows
unconditional updates (generic registry store.go ``Update``); delete preconditions on uid and
resourceVersion must hold (storage ``Preconditions.Check``); no finalizer may be added once
deletion started (apimachinery ``ValidateObjectMetaUpdate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sandbox.kube.errors import Cause, bad_request, conflict, invalid
from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]


def check_type(rtype: ResourceType, obj: Obj) -> None:
    api_version = obj.setdefault("apiVersion", rtype.api_version)
    kind = obj.setdefault("kind", rtype.kind)
    if kind != rtype.kind:
        raise bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})"
        )
    if api_version != rtype.api_version:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the "
            f"expected API version ({rtype.api_version})"
        )


def check_namespace(rtype: ResourceType, meta: Obj, namespace: str) -> None:
    if not rtype.namespaced:
        meta.pop("namespace", None)
        return
    given = meta.get("namespace")
    if given and given != namespace:
        raise bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    meta["namespace"] = namespace


def check_name(obj: Obj, name: str) -> None:
    given = obj["metadata"].get("name")
    if given != name:
        raise bad_request(
            f"the name of the object ({given or ''}) does not match the name on the URL ({name})"
        )


def check_resource_version(rtype: ResourceType, obj: Obj, old: Obj) -> None:
    given = obj["metadata"].get("resourceVersion")
    if not given:
        if rtype.unconditional_update:
            return
        cause = Cause(
            "metadata.resourceVersion",
            "FieldValueInvalid",
            "Invalid value: 0x0: must be specified for an update",
        )
        raise invalid(rtype.plural, rtype.group, obj["metadata"]["name"], [cause])
    if given != old["metadata"]["resourceVersion"]:
        raise conflict(rtype.plural, rtype.group, obj["metadata"]["name"])


def check_preconditions(rtype: ResourceType, old: Obj, pre: Mapping[str, Any]) -> None:
    meta = old["metadata"]
    for key, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
        if pre.get(key) and pre[key] != meta.get(key):
            why = (
                f"Precondition failed: {label} in precondition: {pre[key]}, {label} in "
                f"object meta: {meta.get(key)}"
            )
            raise conflict(rtype.plural, rtype.group, meta["name"], why)


def check_finalizers(rtype: ResourceType, new: Obj, old: Obj) -> None:
    if "deletionTimestamp" not in old["metadata"]:
        return
    before = set(old["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
    if added:
        listed = ", ".join(f'"{f}"' for f in added)
        cause = Cause(
            "metadata.finalizers",
            "FieldValueForbidden",
            "Forbidden: no new finalizers can be added if the object is being "
            f"deleted, found new finalizers []string{{{listed}}}",
        )
        raise invalid(rtype.kind, rtype.group, new["metadata"]["name"], [cause])
