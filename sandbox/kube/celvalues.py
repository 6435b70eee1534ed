"""Decoded JSON turned into the CEL values a CRD rule sees, guided by the schema.

As kube-apiserver's ``UnstructuredToVal`` (apiextensions-apiserver
``pkg/apiserver/schema/cel``): a field typed ``number`` is a double even when written as
``1``, an ``integer`` is an int; strings with format ``date-time``/``date`` are timestamps,
``duration`` durations and ``byte`` bytes; ``x-kubernetes-list-type: set`` and ``map`` lists
compare equal whatever their order; object property names that are not CEL identifiers are
escaped (``foo-bar`` is ``self.foo__dash__bar``, ``namespace`` is ``self.__namespace__``),
see https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#validation-rules.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from celpy import celtypes

Schema = Mapping[str, Any]

_IDENTIFIER = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RESERVED = frozenset(
    {
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
_ESCAPES = (("__", "__underscores__"), (".", "__dot__"), ("-", "__dash__"), ("/", "__slash__"))
_TIME_FORMATS = frozenset({"date-time", "datetime", "date"})
# Go decodes a JSON integer outside int64 as a float64.
_INT64 = range(-(2**63), 2**63)


class UnorderedList(celtypes.ListType):
    """A set or map-type list: ``==`` ignores the order of the items."""

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, list):
            return super().__eq__(other)
        remaining = list(other)
        for item in self:
            match = next((i for i, o in enumerate(remaining) if _same(item, o)), None)
            if match is None:
                return False
            del remaining[match]
        return not remaining

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]


def _same(left: Any, right: Any) -> bool:
    try:
        return bool(left == right)
    except TypeError:
        return False


def escape(name: str) -> str | None:
    """A property name as CEL code names it, or None when it cannot be named."""
    if name in _RESERVED:
        return f"__{name}__"
    for raw, escaped in _ESCAPES:
        name = name.replace(raw, escaped)
    return name if _IDENTIFIER.match(name) else None


def _type(schema: Schema | None) -> str:
    return str(schema.get("type", "")) if schema is not None else ""


def _string(value: str, schema: Schema | None) -> Any:
    fmt = schema.get("format") if schema is not None else None
    try:
        if fmt in _TIME_FORMATS:
            text = value if fmt != "date" else f"{value}T00:00:00Z"
            return celtypes.TimestampType(text)
        if fmt == "duration":
            return celtypes.DurationType(value)
        if fmt == "byte":
            return celtypes.BytesType(base64.b64decode(value, validate=True))
    except (ValueError, TypeError, binascii.Error):
        pass
    return celtypes.StringType(value)


def _child(schema: Schema | None, name: str) -> tuple[Schema | None, bool]:
    """The schema of a field and whether it is a declared property (its name gets escaped)."""
    if schema is None:
        return None, False
    properties = schema.get("properties") or {}
    if name in properties:
        return properties[name], True
    extra = schema.get("additionalProperties")
    return (extra if isinstance(extra, Mapping) else None), False


def _object(value: Mapping[str, Any], schema: Schema | None) -> celtypes.MapType:
    result = celtypes.MapType()
    for name, item in value.items():
        sub, declared = _child(schema, name)
        cel_name = escape(name) if declared else name
        if cel_name is not None:
            result[celtypes.StringType(cel_name)] = to_cel(item, sub)
    return result


def _list(value: list[Any], schema: Schema | None) -> celtypes.ListType:
    items = schema.get("items") if schema is not None else None
    item_schema = items if isinstance(items, Mapping) else None
    converted = [to_cel(item, item_schema) for item in value]
    if schema is not None and schema.get("x-kubernetes-list-type") in ("set", "map"):
        return UnorderedList(converted)
    return celtypes.ListType(converted)


def to_cel(value: Any, schema: Schema | None) -> Any:
    """The CEL value of a decoded JSON value at a node with the given schema."""
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        as_double = _type(schema) == "number" or value not in _INT64
        return celtypes.DoubleType(value) if as_double else celtypes.IntType(value)
    if isinstance(value, float):
        integral = _type(schema) == "integer" and value.is_integer()
        return celtypes.IntType(int(value)) if integral else celtypes.DoubleType(value)
    if isinstance(value, str):
        return _string(value, schema)
    if isinstance(value, list):
        return _list(value, schema)
    return _object(value, schema)
