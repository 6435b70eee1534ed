"""Dropping the fields a structural schema does not know, as the API server does.

Follows ``structuralpruning.PruneWithOptions`` (k8s.io/apiextensions-apiserver
``pkg/apiserver/schema/pruning/algorithm.go``): the root is treated as an embedded resource, so
its ``apiVersion``, ``kind`` and ``metadata`` are never pruned (the server handles them); below
``x-kubernetes-preserve-unknown-fields`` nothing unknown is dropped, but known properties are
still pruned inside; an object without any schema loses every key. Each dropped field is
reported as a path (``spec.foo``, ``spec.items[0].bar``) for the ``unknown field`` warnings and
for ``fieldValidation=Strict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Schema = Mapping[str, Any]

# The fields every (embedded) resource carries outside its schema.
META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def prune(obj: dict[str, Any], schema: Schema) -> list[str]:
    """Prune ``obj`` in place against a CRD version's openAPIV3Schema; return the dropped paths."""
    dropped: list[str] = []
    root = {**schema, "x-kubernetes-embedded-resource": True}
    _prune(obj, root, "", dropped)
    return sorted(dropped)


def _join(parent: str, name: str) -> str:
    return f"{parent}.{name}" if parent else name


def _item_schema(schema: Schema | None) -> Schema | None:
    items = schema.get("items") if schema is not None else None
    return items if isinstance(items, Mapping) else None


def _field_schema(schema: Schema, name: str) -> Schema | None:
    """The schema a field is pruned against: its property, else additionalProperties."""
    properties = schema.get("properties") or {}
    if name in properties:
        return properties[name]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    if isinstance(extra, Mapping):
        return extra
    if extra is True:
        return {"x-kubernetes-preserve-unknown-fields": True}
    return None


def _knows(schema: Schema, name: str) -> bool:
    if name in (schema.get("properties") or {}):
        return True
    return schema.get("additionalProperties", False) is not False


def _prune(value: Any, schema: Schema | None, path: str, dropped: list[str]) -> None:
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(value, schema, path, dropped)
    elif isinstance(value, dict):
        _prune_object(value, schema, path, dropped)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _prune(item, _item_schema(schema), f"{path}[{i}]", dropped)


def _prune_object(
    value: dict[str, Any], schema: Schema | None, path: str, dropped: list[str]
) -> None:
    embedded = schema is not None and schema.get("x-kubernetes-embedded-resource", False)
    for name in list(value):
        if embedded and name in META_FIELDS:
            continue
        if schema is not None and _knows(schema, name):
            _prune(value[name], _field_schema(schema, name), _join(path, name), dropped)
        else:
            dropped.append(_join(path, name))
            del value[name]


def _skip_prune(value: Any, schema: Schema, path: str, dropped: list[str]) -> None:
    """Below preserve-unknown-fields: keep unknown fields, still prune inside known ones."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            item_schema = _item_schema(schema)
            if item_schema is not None:
                _skip_prune(item, item_schema, f"{path}[{i}]", dropped)
        return
    if not isinstance(value, dict):
        return
    embedded = schema.get("x-kubernetes-embedded-resource", False)
    for name in list(value):
        if (embedded and name in META_FIELDS) or not _knows(schema, name):
            continue
        _prune(value[name], _field_schema(schema, name), _join(path, name), dropped)
