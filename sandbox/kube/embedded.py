"""Checks on ``x-kubernetes-embedded-resource`` objects inside a custom resource.

An embedded resource must carry ``apiVersion`` and ``kind`` as non-empty strings, the kind a
DNS-1035 label in any case and the apiVersion a group/version with at most one slash
(apiextensions-apiserver ``pkg/apiserver/schema/objectmeta/validation.go``,
``validateEmbeddedResource``). The ObjectMeta checks that file also runs on the embedded
``metadata`` (name syntax and the like) are not reproduced. The custom resource's own root is
left to the server, which checks apiVersion, kind and metadata itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sandbox.kube import fielderrors as fe
from sandbox.kube.fielderrors import FieldError

Schema = Mapping[str, Any]
Errors = list[FieldError]

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MAX = 63
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def validate_embedded(schema: Schema, value: Any, path: str = fe.ROOT_FIELD) -> Errors:
    """Every embedded-resource error below the root of ``value``."""
    if isinstance(value, list):
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return []
        return [
            error
            for i, item in enumerate(value)
            for error in validate_embedded(items, item, fe.index(path, i))
        ]
    if not isinstance(value, dict):
        return []
    errors: Errors = []
    if schema.get("x-kubernetes-embedded-resource") and path != fe.ROOT_FIELD:
        errors += _resource(value, path)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if name in properties:
            errors += validate_embedded(properties[name], item, fe.child(path, name))
        elif isinstance(extra, Mapping):
            errors += validate_embedded(extra, item, fe.key(path, name))
    return errors


def _resource(value: dict[str, Any], path: str) -> Errors:
    errors = [fe.required(fe.child(path, k)) for k in ("apiVersion", "kind") if k not in value]
    if "apiVersion" in value:
        errors += _api_version(value["apiVersion"], fe.child(path, "apiVersion"))
    if "kind" in value:
        errors += _kind(value["kind"], fe.child(path, "kind"))
    return errors


def _api_version(value: Any, field: str) -> Errors:
    if not isinstance(value, str):
        return [fe.invalid(field, value, "must be a string")]
    if not value:
        return [fe.invalid(field, value, "must not be empty")]
    if value.count("/") > 1:
        return [fe.invalid(field, value, f"unexpected GroupVersion string: {value}")]
    return []


def _kind(value: Any, field: str) -> Errors:
    if not isinstance(value, str):
        return [fe.invalid(field, value, "must be a string")]
    if not value:
        return [fe.invalid(field, value, "must not be empty")]
    problems = []
    if len(value) > _DNS1035_MAX:
        problems.append(f"must be no more than {_DNS1035_MAX} characters")
    if not _DNS1035.match(value.lower()):
        problems.append(_DNS1035_MESSAGE)
    if problems:
        detail = "may have mixed case, but should otherwise match: " + ",".join(problems)
        return [fe.invalid(field, value, detail)]
    return []
