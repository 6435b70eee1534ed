"""Schema defaults, applied as the API server applies them after pruning.

Two steps of k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/defaulting``:
``PruneNonNullableNullsWithoutDefaults`` (prunenulls.go) first drops a ``null`` that the schema
neither allows (``nullable: false``) nor can replace (no ``default``); then ``Default``
(algorithm.go) sets each absent property that has a default, and each non-nullable ``null``
that has one, before descending, so defaults nested inside a freshly defaulted object apply
too. Defaults are deep-copied: no two objects ever share a default value.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]


def _sub_schema(schema: Schema | None, name: str) -> Schema | None:
    """The schema of a field: its property, else the additionalProperties schema."""
    if schema is None:
        return None
    properties = schema.get("properties") or {}
    if name in properties:
        return properties[name]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _items(schema: Schema | None) -> Schema | None:
    items = schema.get("items") if schema is not None else None
    return items if isinstance(items, Mapping) else None


def _non_nullable_null(value: Any, schema: Schema | None) -> bool:
    return value is None and schema is not None and not schema.get("nullable", False)


def drop_nulls(value: Any, schema: Schema | None) -> None:
    """Remove nulls the schema forbids and cannot default (in place)."""
    if isinstance(value, dict):
        for name in list(value):
            sub = _sub_schema(schema, name)
            if _non_nullable_null(value[name], sub) and sub is not None and "default" not in sub:
                del value[name]
            else:
                drop_nulls(value[name], sub)
    elif isinstance(value, list):
        for item in value:
            drop_nulls(item, _items(schema))


def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Fill in defaults (in place), descending into defaulted values as well."""
    if schema is None:
        return
    if isinstance(value, dict):
        _default_object(value, schema)
    elif isinstance(value, list):
        items = _items(schema)
        for i, item in enumerate(value):
            if _non_nullable_null(item, items) and items is not None and "default" in items:
                value[i] = copy.deepcopy(items["default"])
            apply_defaults(value[i], items)


def _default_object(value: dict[str, Any], schema: Schema) -> None:
    for name, prop in (schema.get("properties") or {}).items():
        if "default" not in prop:
            continue
        if name not in value or _non_nullable_null(value[name], prop):
            value[name] = copy.deepcopy(prop["default"])
    extra = schema.get("additionalProperties")
    for name in list(value):
        sub = _sub_schema(schema, name)
        if sub is extra and _non_nullable_null(value[name], sub) and sub is not None:
            value[name] = copy.deepcopy(sub.get("default"))
        apply_defaults(value[name], sub)
