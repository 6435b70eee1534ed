"""OpenAPI value validation of a custom resource, worded as kube-apiserver words it.

A port of what kube-openapi's ``validate.SchemaValidator`` checks on a structural schema, with
its error texts (``pkg/validation/errors/schema.go``: "spec.x in body must be of type integer:
\"string\"", "... should match '^a$'", ...) turned into field errors the way
apiextensions-apiserver's ``kubeOpenAPIResultToFieldErrors`` does (Required, NotSupported,
TooLong, TooMany, TypeInvalid, else Invalid). Paths follow kube-openapi: properties joined by
dots, items as ``[i]``, map entries as ``.key``.

On an update each node is paired with its stored counterpart (``correlate``); a node equal to
it is not validated at all, which is CRD validation ratcheting (KEP-4008, beta and on by
default since Kubernetes 1.30).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from sandbox.kube import correlate
from sandbox.kube import fielderrors as fe
from sandbox.kube.fielderrors import FieldError
from sandbox.kube.formats import format_holds

Schema = Mapping[str, Any]
Errors = list[FieldError]

# swag.IsFloat64AJSONInteger: beyond 2^53 a float is no longer taken for an integer.
_MAX_JSON_INTEGER = 2**53


def validate(schema: Schema, value: Any, old: Any = correlate.MISSING) -> Errors:
    """Every OpenAPI violation of ``value`` (the whole object) against its schema."""
    return _node(schema, value, "", old)


def _field(path: str) -> str:
    trimmed = path[1:] if path.startswith(".") else path
    return trimmed or fe.ROOT_FIELD


def _node(schema: Schema, value: Any, path: str, old: Any) -> Errors:
    if correlate.has_old(old) and correlate.json_equal(old, value):
        return []
    if value is None:
        return _type(schema, None, path) + _enum(schema, None, path)
    errors = _type(schema, value, path) + _composition(schema, value, path)
    if isinstance(value, str):
        errors += _string(schema, value, path) + _format(schema, value, path)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        errors += _number(schema, value, path)
    elif isinstance(value, list):
        errors += _array(schema, value, path, old)
    errors += _enum(schema, value, path)
    if isinstance(value, dict):
        errors += _object(schema, value, path, old)
    return errors


def type_name(value: Any) -> str:
    """The JSON type kube-openapi infers for a decoded value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer" if -(2**63) <= value < 2**63 else "number"  # Go: float64 beyond int64
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _schema_types(schema: Schema) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    declared = schema.get("type")
    return [declared] if isinstance(declared, str) and declared else []


def _type(schema: Schema, value: Any, path: str) -> Errors:
    types = _schema_types(schema)
    actual = type_name(value)
    if not types or actual in types:
        return []
    if value is None and schema.get("nullable"):
        return []
    integral = (
        isinstance(value, float)
        and value.is_integer()
        and abs(value) <= _MAX_JSON_INTEGER
        and "integer" in types
    )
    if integral or (actual == "integer" and "number" in types):
        return []
    detail = f"{path} in body must be of type {','.join(types)}: {fe.go_quote(actual)}"
    return [fe.type_invalid(_field(path), actual, detail)]


def _string(schema: Schema, value: str, path: str) -> Errors:
    """maxLength, minLength and pattern, stopping at the first failure as kube-openapi does."""
    field = _field(path)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return [fe.too_long(field, int(schema["maxLength"]))]
    if "minLength" in schema and len(value) < schema["minLength"]:
        detail = f"{path} in body should be at least {schema['minLength']} chars long"
        return [fe.invalid(field, value, detail)]
    pattern = schema.get("pattern")
    if pattern and not _matches(pattern, value):
        return [fe.invalid(field, value, f"{path} in body should match '{pattern}'")]
    return []


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _matches(pattern: str, value: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(value) is not None


def _format(schema: Schema, value: str, path: str) -> Errors:
    name = schema.get("format")
    if not name or format_holds(name, value):
        return []
    detail = f"{path} in body must be of type {name}: {fe.go_quote(value)}"
    return [fe.type_invalid(_field(path), value, detail)]


def _limit(number: int | float, bound: float) -> str:
    """A bound as kube-openapi prints it: truncated to int64 for integer data."""
    return str(int(bound)) if isinstance(number, int) else fe.go_float(float(bound))


def _number(schema: Schema, value: int | float, path: str) -> Errors:
    errors: Errors = []
    field = _field(path)
    factor = schema.get("multipleOf")
    if factor and not _is_multiple(value, factor):
        detail = f"{path} in body should be a multiple of {_limit(value, factor)}"
        errors.append(fe.invalid(field, value, detail))
    for bound, word in (("minimum", "greater"), ("maximum", "less")):
        if bound in schema:
            errors += _bound(schema, value, path, bound, word)
    return errors


def _bound(schema: Schema, value: int | float, path: str, bound: str, word: str) -> Errors:
    """minimum (word "greater") or maximum ("less"), exclusive or not; int data meets an
    int64-truncated bound, as kube-openapi's MinimumNativeType does."""
    limit = int(schema[bound]) if isinstance(value, int) else schema[bound]
    strict = bool(schema.get("exclusive" + bound.capitalize()))
    beyond = value > limit if word == "less" else value < limit
    if not beyond and not (strict and value == limit):
        return []
    relation = f"{word} than" if strict else f"{word} than or equal to"
    detail = f"{path} in body should be {relation} {_limit(value, schema[bound])}"
    return [fe.invalid(_field(path), value, detail)]


def _is_multiple(value: int | float, factor: float) -> bool:
    if isinstance(value, int) and int(factor) != 0:
        return value % int(factor) == 0
    quotient = value * (1 / factor) if factor < 1 else value / factor
    return float(quotient).is_integer()


def _array(schema: Schema, value: list[Any], path: str, old: Any) -> Errors:
    errors: Errors = []
    items = schema.get("items")
    if isinstance(items, Mapping):
        olds = correlate.old_items(schema, value, old)
        for i, item in enumerate(value):
            errors += _node(items, item, f"{path}[{i}]", olds[i])
    field = _field(path)
    if "minItems" in schema and len(value) < schema["minItems"]:
        detail = f"{path} in body should have at least {schema['minItems']} items"
        errors.append(fe.invalid(field, len(value), detail))
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(fe.too_many(field, len(value), int(schema["maxItems"])))
    return errors


def _enum_member(value: Any, member: Any) -> bool:
    if correlate.json_equal(value, member):
        return True
    numbers = (int, float)
    both = isinstance(value, numbers) and isinstance(member, numbers)
    return both and not isinstance(value, bool) and not isinstance(member, bool) and value == member


def _enum(schema: Schema, value: Any, path: str) -> Errors:
    members = schema.get("enum")
    if not members or any(_enum_member(value, m) for m in members):
        return []
    allowed = [m if isinstance(m, str) else fe.json_text(m) for m in members]
    return [fe.not_supported(_field(path), value, allowed)]


def _object_size(schema: Schema, value: dict[str, Any], path: str) -> Errors:
    field, count = _field(path), len(value)
    if "minProperties" in schema and count < schema["minProperties"]:
        detail = f"{path} in body should have at least {schema['minProperties']} properties"
        return [fe.invalid(field, count, detail)]
    if "maxProperties" in schema and count > schema["maxProperties"]:
        return [fe.too_many(field, count, int(schema["maxProperties"]))]
    return []


def _object(schema: Schema, value: dict[str, Any], path: str, old: Any) -> Errors:
    """Sizes first (a size error ends the object's checks), then entries, then required."""
    size_errors = _object_size(schema, value, path)
    if size_errors:
        return size_errors
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    errors: Errors = []
    for name, item in value.items():
        if name not in properties and isinstance(extra, Mapping):
            errors += _node(extra, item, f"{path}.{name}", correlate.old_field(schema, old, name))
    for name, item in value.items():
        if name in properties:
            child = f"{path}.{name}" if path else name
            errors += _node(properties[name], item, child, correlate.old_field(schema, old, name))
    for name in schema.get("required") or []:
        if name not in value:
            errors.append(fe.required(_field(f"{path}.{name}")))
    return errors


def _composition(schema: Schema, value: Any, path: str) -> Errors:
    """allOf, anyOf, oneOf and not: value validations at the same place."""
    errors: Errors = []
    for keyword, check in (("anyOf", _any_of), ("oneOf", _one_of), ("allOf", _all_of)):
        branches = schema.get(keyword)
        if branches:
            errors += check([_node(b, value, path, correlate.MISSING) for b in branches], path)
    negated = schema.get("not")
    if isinstance(negated, Mapping) and not _node(negated, value, path, correlate.MISSING):
        errors.append(_composite(f"{fe.go_quote(path)} must not validate the schema (not)"))
    return errors


def _composite(message: str) -> FieldError:
    """A composite kube-openapi error: not a field error, so the server reports it on <nil>."""
    return fe.invalid(fe.ROOT_FIELD, "", message)


def _fewest(results: list[Errors]) -> Errors:
    return min(results, key=len)


def _any_of(results: list[Errors], path: str) -> Errors:
    if any(not r for r in results):
        return []
    message = f"{fe.go_quote(path)} must validate at least one schema (anyOf)"
    return [_composite(message), *_fewest(results)]


def _one_of(results: list[Errors], path: str) -> Errors:
    valid = sum(1 for r in results if not r)
    if valid == 1:
        return []
    found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
    message = f"{fe.go_quote(path)} must validate one and only one schema (oneOf). {found}"
    return [_composite(message), *(_fewest(results) if valid == 0 else [])]


def _all_of(results: list[Errors], path: str) -> Errors:
    merged = [error for r in results for error in r]
    if not merged:
        return []
    suffix = ". None validated" if all(results) else ""
    message = f"{fe.go_quote(path)} must validate all the schemas (allOf){suffix}"
    return [*merged, _composite(message)]
