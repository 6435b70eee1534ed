"""Object metadata rules shared by every write: system fields, generation, no-op detection.

These follow k8s.io/apiserver/pkg/registry/rest (``BeforeCreate``, ``BeforeUpdate``,
``FillObjectMetaSystemFields``), the generic store (``markAsDeleting``,
``IgnoreManagedFieldsTimestampsTransformer``) and the strategies: a custom resource's
generation moves when anything outside ``metadata`` changes (apiextensions
pkg/registry/customresource/strategy.go ``PrepareForUpdate``), a Deployment's when its spec
or annotations change (pkg/registry/apps/deployment/strategy.go).
"""

from __future__ import annotations

import copy
import secrets
import uuid
from datetime import datetime
from typing import Any

from sandbox.kube.events import from_core, is_events_group
from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]

# names.SimpleNameGenerator: generateName plus 5 characters from this alphabet.
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAME_SUFFIX_LENGTH = 5
_MAX_GENERATED_PREFIX = 63 - _NAME_SUFFIX_LENGTH

# Metadata the server owns: a write never changes these from what is stored.
_SYSTEM_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def timestamp(now: datetime) -> str:
    """RFC 3339 at one-second granularity, as metav1.Time serialises."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def generate_name(prefix: str) -> str:
    """``generateName`` plus a random suffix, as names.SimpleNameGenerator does."""
    suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(_NAME_SUFFIX_LENGTH))
    return prefix[:_MAX_GENERATED_PREFIX] + suffix


def fill_create_fields(rtype: ResourceType, obj: Obj, now: datetime) -> None:
    """Set uid, creationTimestamp and generation; clear deletion fields and selfLink."""
    meta = obj["metadata"]
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "resourceVersion"):
        meta.pop(key, None)
    meta["uid"] = str(uuid.uuid4())
    meta["creationTimestamp"] = timestamp(now)
    if rtype.tracks_generation:
        meta["generation"] = 1


def keep_system_fields(new: Obj, old: Obj) -> None:
    """Copy the server-owned metadata of ``old`` onto ``new`` (``BeforeUpdate``)."""
    meta = new["metadata"]
    for key in _SYSTEM_FIELDS:
        if key in old["metadata"]:
            meta[key] = old["metadata"][key]
        else:
            meta.pop(key, None)
    meta.pop("selfLink", None)
    meta["resourceVersion"] = old["metadata"]["resourceVersion"]


def keep_status(rtype: ResourceType, new: Obj, old: Obj) -> None:
    """Main-resource writes of a kind with a status subresource keep the stored status."""
    if not rtype.status_subresource:
        return
    if "status" in old:
        new["status"] = copy.deepcopy(old["status"])
    else:
        new.pop("status", None)


def status_only(new: Obj, old: Obj) -> Obj:
    """A ``/status`` write: the stored object with only its status (and managedFields) taken."""
    result = copy.deepcopy(old)
    if "status" in new:
        result["status"] = copy.deepcopy(new["status"])
    else:
        result.pop("status", None)
    return result


def _generation_view(rtype: ResourceType, obj: Obj) -> Any:
    if rtype.custom:
        return {k: v for k, v in obj.items() if k != "metadata"}
    return (obj.get("spec"), obj["metadata"].get("annotations"))


def bump_generation(rtype: ResourceType, new: Obj, old: Obj) -> None:
    """Move metadata.generation by one when the kind's generation-relevant content changed."""
    if not rtype.tracks_generation:
        return
    if _generation_view(rtype, new) != _generation_view(rtype, old):
        new["metadata"]["generation"] = int(old["metadata"].get("generation", 0)) + 1


def _without_times(obj: Obj) -> Obj:
    meta = obj.get("metadata", {})
    fields = [{k: v for k, v in e.items() if k != "time"} for e in meta.get("managedFields") or []]
    return {**obj, "metadata": {**meta, "managedFields": fields}}


def same_content(new: Obj, old: Obj) -> bool:
    """True when ``new`` differs from ``old`` only in managedFields timestamps."""
    return _without_times(new) == _without_times(old)


def mark_deleting(obj: Obj, now: datetime) -> Obj:
    """A copy with deletionTimestamp set and grace 0, as ``markAsDeleting`` does."""
    result = copy.deepcopy(obj)
    meta = result["metadata"]
    if "deletionTimestamp" not in meta and int(meta.get("generation", 0)) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    meta.setdefault("deletionTimestamp", timestamp(now))
    meta["deletionGracePeriodSeconds"] = 0
    return result


def in_version(obj: Obj, rtype: ResourceType) -> Obj:
    """The object as served at ``rtype``'s version (CRD conversion strategy None)."""
    if is_events_group(rtype):
        return from_core(obj) if obj.get("apiVersion") == "v1" else obj
    if obj.get("apiVersion") == rtype.api_version and obj.get("kind") == rtype.kind:
        return obj
    return {**obj, "apiVersion": rtype.api_version, "kind": rtype.kind}
