"""What the server refuses to store: bad names, undecodable built-ins, schema violations.

Names follow k8s.io/apimachinery/pkg/util/validation (RFC 1123 subdomain for most kinds, RFC
1123 label for Namespaces, RFC 1035 label for Services, path segments for RBAC objects).
Built-ins get the decoding checks their Go types impose (ConfigMap data values are strings,
Secret data is base64) and the worded 400 ``transformDecodeError`` gives them
(apiserver pkg/endpoints/handlers/rest.go). Custom resources go through ``schema.check``;
unknown fields are warned about, pruned, or (``fieldValidation=Strict``) refused.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sandbox.kube import schema
from sandbox.kube.errors import ApiError, Cause, bad_request, invalid
from sandbox.kube.events import event_causes
from sandbox.kube.resources import ResourceType

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_RE = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_LABEL_RE = re.compile(rf"^{_LABEL}$")
_DNS1035_RE = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_CONFIG_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")

_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

FIELD_VALIDATION_MODES = ("Ignore", "Warn", "Strict")


@dataclass(slots=True)
class Outcome:
    """A validated object and the warnings to send with it."""

    obj: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    unknown_fields: list[str] = field(default_factory=list)


def _name_problem(rule: str, name: str) -> str | None:
    if rule == "path":
        if name in (".", ".."):
            return f"may not be '{name}'"
        bad = next((c for c in ("/", "%") if c in name), None)
        return f"may not contain '{bad}'" if bad else None
    limit, regex, message = {
        "label": (63, _LABEL_RE, _LABEL_MSG),
        "dns1035": (63, _DNS1035_RE, _DNS1035_MSG),
    }.get(rule, (253, _SUBDOMAIN_RE, _SUBDOMAIN_MSG))
    if len(name) > limit:
        return f"must be no more than {limit} characters"
    return None if regex.match(name) else message


def name_causes(rtype: ResourceType, meta: Mapping[str, Any]) -> list[Cause]:
    """Field errors of metadata.name (and generateName) for this kind."""
    name = meta.get("name") or ""
    if not name:
        return [
            Cause(
                "metadata.name",
                "FieldValueRequired",
                "Required value: name or generateName is required",
            )
        ]
    problem = _name_problem(rtype.name_rule, name)
    if problem is None:
        return []
    return [Cause("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {problem}')]


def decode_error(rtype: ResourceType, body: Mapping[str, Any], why: str) -> ApiError:
    """The 400 a body that does not decode into the kind's type gets."""
    version = str(body.get("apiVersion", rtype.api_version)).rsplit("/", 1)[-1]
    kind = body.get("kind") or rtype.kind
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {rtype.kind}: {why}')


def _check_string_map(rtype: ResourceType, body: Mapping[str, Any], key: str) -> None:
    values = body.get(key)
    if values is None:
        return
    if not isinstance(values, dict):
        why = (
            f"json: cannot unmarshal {_json_type(values)} into Go struct field "
            f"{rtype.kind}.{key} of type map[string]string"
        )
        raise decode_error(rtype, body, why)
    for value in values.values():
        if not isinstance(value, str):
            raise decode_error(
                rtype,
                body,
                f"json: cannot unmarshal {_json_type(value)} into Go "
                f"struct field {rtype.kind}.{key} of type string",
            )


def _json_type(value: Any) -> str:
    """What Go's encoding/json calls a JSON value in "cannot unmarshal X" errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "string"


def _check_secret_data(rtype: ResourceType, body: Mapping[str, Any]) -> None:
    for value in (body.get("data") or {}).values():
        if not isinstance(value, str):
            raise decode_error(
                rtype,
                body,
                f"json: cannot unmarshal {_json_type(value)} into Go "
                "struct field Secret.data of type []uint8",
            )
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise decode_error(rtype, body, "illegal base64 data at input byte 0") from None


def _config_key_causes(body: Mapping[str, Any], keys: tuple[str, ...]) -> list[Cause]:
    causes = []
    for section in keys:
        for key in body.get(section) or {}:
            if not _CONFIG_KEY_RE.match(key):
                causes.append(
                    Cause(
                        f"{section}[{key}]",
                        "FieldValueInvalid",
                        f'Invalid value: "{key}": a valid config key must consist of '
                        "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  "
                        "or 'KEY_NAME',  or 'key-name', regex used for validation is "
                        "'[-._a-zA-Z0-9]+')",
                    )
                )
    return causes


def check_builtin_decoding(rtype: ResourceType, body: Mapping[str, Any]) -> None:
    """Refuse bodies the kind's Go type could not decode (400 BadRequest)."""
    if rtype.kind == "ConfigMap" and not rtype.group:
        _check_string_map(rtype, body, "data")
    if rtype.kind == "Secret":
        _check_string_map(rtype, body, "stringData")
        _check_secret_data(rtype, body)
    if not isinstance(body.get("metadata", {}), dict):
        raise decode_error(rtype, body, "json: cannot unmarshal into Go struct field .metadata")


def check_object(
    rtype: ResourceType, obj: dict[str, Any], old: Mapping[str, Any] | None, mode: str
) -> Outcome:
    """Validate a fully prepared object; raise 422 Invalid (or 400 under Strict)."""
    meta = obj["metadata"]
    causes = name_causes(rtype, meta)
    outcome = Outcome(obj)
    if rtype.kind in ("ConfigMap", "Secret") and not rtype.group:
        causes += _config_key_causes(obj, ("data", "binaryData"))
    if rtype.kind == "Event" and not rtype.custom:
        causes += event_causes(rtype, obj, old is None)
    if rtype.custom and rtype.schema is not None:
        outcome = _check_custom(rtype, obj, old, mode, causes)
    if causes:
        raise invalid(rtype.kind, rtype.group, meta.get("name", ""), causes)
    return outcome


def _check_custom(
    rtype: ResourceType,
    obj: dict[str, Any],
    old: Mapping[str, Any] | None,
    mode: str,
    causes: list[Cause],
) -> Outcome:
    assert rtype.schema is not None
    checked = schema.check(rtype.schema, obj, old)
    unknown = list(checked.unknown_fields)
    causes.extend(Cause(e.field, e.reason, e.message) for e in checked.errors)
    warnings = [f'unknown field "{path}"' for path in unknown] if mode == "Warn" else []
    result = dict(checked.obj)
    result["metadata"] = obj["metadata"]
    return Outcome(result, warnings, unknown if mode == "Strict" else [])


class StrictDecodingError(ApiError):
    """400 for unknown fields under fieldValidation=Strict; keeps the paths for patch callers."""

    def __init__(self, error: ApiError, unknown: list[str]) -> None:
        super().__init__(error.code, error.reason, error.message, error.details)
        self.unknown = unknown


def strict_error(
    rtype: ResourceType, body: Mapping[str, Any], unknown: list[str]
) -> StrictDecodingError:
    """The 400 a create or update with unknown fields gets under fieldValidation=Strict."""
    joined = ", ".join(f'unknown field "{path}"' for path in unknown)
    return StrictDecodingError(
        decode_error(rtype, body, f"strict decoding error: {joined}"), unknown
    )


def strict_patch_error(patched: Mapping[str, Any], unknown: list[str]) -> ApiError:
    """The 422 a patch with unknown fields gets under Strict (handlers/patch.go)."""
    joined = ", ".join(f'unknown field "{path}"' for path in unknown)
    text = json.dumps(json.dumps(patched, separators=(",", ":")))  # Go's %q of the JSON
    message = f"Invalid value: {text}: strict decoding error: {joined}"
    return invalid("", "", "", [Cause("patch", "FieldValueInvalid", message)])


def field_validation_mode(raw: str | None) -> str:
    """The ``fieldValidation`` query parameter; Warn when absent, 400 when unknown."""
    if not raw:
        return "Warn"
    if raw not in FIELD_VALIDATION_MODES:
        raise bad_request(
            f"fieldValidation parameter unsupported: {raw!r}. Accepted values: Ignore, Warn, Strict"
        )
    return raw
