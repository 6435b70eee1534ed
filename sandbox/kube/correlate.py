"""Finding the old value that corresponds to a new one, for updates.

On an update the API server pairs each node of the new object with the node of the stored one
at the same place ("correlation"). Transition rules (CEL rules that mention ``oldSelf``) only
run where such a pair exists, and unchanged pairs have their errors ratcheted away
(KEP-4008). Object fields and map entries pair by key, unless the map is
``x-kubernetes-map-type: atomic``; list items pair only in ``x-kubernetes-list-type: map``
lists (by their key fields) and ``set`` lists (by value). Items of atomic lists never pair.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]


class _Missing(enum.Enum):
    MISSING = enum.auto()


# There is no old value at this place (a create, or a node that does not correlate).
MISSING = _Missing.MISSING


def json_equal(left: Any, right: Any) -> bool:
    """Go's reflect.DeepEqual on decoded JSON: 1, 1.0 and true are three different values."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(json_equal, left, right))
    return type(left) is type(right) and bool(left == right)


def has_old(old: Any) -> bool:
    """Whether a usable old value exists (a stored null counts as none, as in Go)."""
    return old is not MISSING and old is not None


def old_field(schema: Schema, old: Any, name: str) -> Any:
    """The old value of an object field or map entry."""
    if schema.get("x-kubernetes-map-type") == "atomic" or not isinstance(old, dict):
        return MISSING
    return old.get(name, MISSING)


def list_map_key(schema: Schema, item: Any) -> tuple[Any, ...] | None:
    """The key of an item of a ``list-type: map`` list, or None for a non-object."""
    if not isinstance(item, dict):
        return None
    keys = schema.get("x-kubernetes-list-map-keys") or []
    return tuple(_hashable(item.get(k, MISSING)) for k in keys)


def old_items(schema: Schema, new: list[Any], old: Any) -> list[Any]:
    """For each new item, the old item it correlates with (or MISSING)."""
    list_type = schema.get("x-kubernetes-list-type")
    if not isinstance(old, list) or list_type not in ("map", "set"):
        return [MISSING] * len(new)
    if list_type == "set":
        return [next((o for o in old if json_equal(o, n)), MISSING) for n in new]
    by_key = {list_map_key(schema, o): o for o in old if isinstance(o, dict)}
    return [by_key.get(list_map_key(schema, n), MISSING) for n in new]


def _hashable(value: Any) -> Any:
    """A hashable stand-in for a JSON value, keeping 1, 1.0 and true apart."""
    if isinstance(value, dict):
        return ("object", tuple((k, _hashable(value[k])) for k in sorted(value)))
    if isinstance(value, list):
        return ("array", tuple(_hashable(v) for v in value))
    return (type(value).__name__, value)
