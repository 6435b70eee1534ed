"""Label and field selectors, parsed as k8s.io/apimachinery/pkg/labels and pkg/fields parse them.

Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a`` and ``!a``,
comma-separated (a comma inside parentheses belongs to the set). Field selectors: ``=``, ``==``
and ``!=`` on ``metadata.name``, ``metadata.namespace`` and the kind's extra field labels.
A selector is a predicate over an object; a parse error is a 400 BadRequest.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from sandbox.kube.errors import ApiError, bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=()]+)\s+(in|notin)\s+\((.*)\)\s*$")
_CMP_RE = re.compile(r"^\s*([^\s!=]+)\s*(==|=|!=)\s*([^\s]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([^\s!=()]+)\s*$")


def _split_requirements(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Predicate:
    match = _SET_RE.match(text)
    if match and not match.group(1):
        key, op = match.group(2), match.group(3)
        values = {v.strip() for v in match.group(4).split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    match = _CMP_RE.match(text)
    if match:
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = _EXISTS_RE.match(text)
    if match:
        negate, key = match.group(1) == "!", match.group(2)
        return lambda labels: (key in labels) != negate
    raise bad_request(
        f"unable to parse requirement: found '{text.strip()}', expected: valid selector"
    )


def label_selector(text: str | None) -> Predicate:
    """A predicate over objects for a label selector string (empty: everything)."""
    if not text:
        return lambda obj: True
    requirements = [_requirement(part) for part in _split_requirements(text)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(req(labels) for req in requirements)

    return matches


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string value of a dotted field path, "" when absent (as the server indexes it)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, dict) and path == "source":
        value = value.get("component")
    return "" if value is None else str(value)


def field_selector(
    text: str | None, extra_labels: Sequence[str], custom: bool, namespaced: bool = True
) -> Predicate:
    """A predicate for a field selector string; unknown fields are a 400 as on the server."""
    if not text:
        return lambda obj: True
    known = ["metadata.name", *(["metadata.namespace"] if namespaced else []), *extra_labels]
    checks: list[Predicate] = []
    for part in _split_requirements(text):
        match = _CMP_RE.match(part)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        key, op, value = match.groups()
        if key not in known:
            raise _unknown_field(key, custom)
        checks.append(_field_check(key, op, value))
    return lambda obj: all(check(obj) for check in checks)


def _field_check(key: str, op: str, value: str) -> Predicate:
    if op == "!=":
        return lambda obj: field_value(obj, key) != value
    return lambda obj: field_value(obj, key) == value


def _unknown_field(key: str, custom: bool) -> ApiError:
    if custom:
        return bad_request(
            f'"{key}" is not a known field selector: only "metadata.name", "metadata.namespace"'
        )
    return bad_request(f"field label not supported: {key}")
