"""Uniqueness of ``x-kubernetes-list-type: set`` items and ``map`` keys.

The API server checks these after the OpenAPI validation (apiextensions-apiserver
``pkg/apiserver/schema/listtype/validation.go``): the second occurrence of an item or of a key
is a ``Duplicate value`` error at that index, reported once however often the value repeats;
a map list's item that is not an object is ``must be an object for an array of list-type map``.
On an update the check only runs if the stored object passes it (a ratchet for old data).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sandbox.kube import fielderrors as fe
from sandbox.kube.correlate import list_map_key
from sandbox.kube.fielderrors import FieldError

Schema = Mapping[str, Any]
Errors = list[FieldError]


def validate_lists(schema: Schema, value: Any, path: str = fe.ROOT_FIELD) -> Errors:
    """Every set or map-list duplicate in ``value``, walking properties, maps and items."""
    if isinstance(value, list):
        return _array(schema, value, path)
    if not isinstance(value, dict):
        return []
    errors: Errors = []
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if isinstance(extra, Mapping) and name not in properties:
            errors += validate_lists(extra, item, fe.key(path, name))
        elif name in properties:
            errors += validate_lists(properties[name], item, fe.child(path, name))
    return errors


def _array(schema: Schema, value: list[Any], path: str) -> Errors:
    list_type = schema.get("x-kubernetes-list-type")
    errors: Errors = []
    if list_type == "set":
        errors += [fe.duplicate(fe.index(path, i), value[i]) for i in _second_occurrences(value)]
    elif list_type == "map":
        errors += _map_list(schema, value, path)
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            errors += validate_lists(items, item, fe.index(path, i))
    return errors


def _identity(value: Any) -> Any:
    """A hashable identity for a JSON value; 1, 1.0 and true stay apart."""
    return list_map_key({"x-kubernetes-list-map-keys": ["v"]}, {"v": value})


def _second_occurrences(values: list[Any]) -> list[int]:
    seen: dict[Any, int] = {}
    repeated: list[int] = []
    for i, item in enumerate(values):
        identity = _identity(item)
        seen[identity] = seen.get(identity, 0) + 1
        if seen[identity] == 2:
            repeated.append(i)
    return repeated


def _map_list(schema: Schema, value: list[Any], path: str) -> Errors:
    for i, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            detail = "must be an object for an array of list-type map"
            return [fe.invalid(fe.index(path, i), item, detail)]
    keys: list[str] = list(schema.get("x-kubernetes-list-map-keys") or [])
    present = [{k: item[k] for k in keys if isinstance(item, dict) and k in item} for item in value]
    return [fe.duplicate(fe.index(path, i), present[i]) for i in _second_occurrences(present)]
