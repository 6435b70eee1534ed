"""Just enough Kubernetes protobuf to read what kubectl's typed commands send.

kubectl's built-in typed requests (``kubectl create configmap|secret|namespace|
serviceaccount|role|rolebinding|deployment``, ``kubectl auth can-i``) post
``application/vnd.kubernetes.protobuf`` and do not fall back to JSON on a 415, so the double
decodes those messages. The wire format is the apimachinery envelope
(k8s.io/apimachinery/pkg/runtime/serializer/protobuf: the magic ``k8s\\x00``, then a
``runtime.Unknown`` with typeMeta=1 {apiVersion=1, kind=2} and raw=2) around the message of
k8s.io/api's generated.proto; field numbers below are those files'. Maps are repeated
key=1/value=2 entries; ``metav1.Time`` is seconds=1. Only the fields those commands set are
read (a Deployment's pod template, for one, is a subset). Answers are always JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Union

from sandbox.kube.errors import bad_request

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5

# A field is (json name, how to read it); a schema maps field numbers to fields.
Reader = Union[str, "Schema", tuple[str, "Schema"]]
Schema = Mapping[int, tuple[str, Reader]]

_OWNER: Schema = {
    1: ("kind", "str"),
    3: ("name", "str"),
    4: ("uid", "str"),
    5: ("apiVersion", "str"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
_META: Schema = {
    1: ("name", "str"),
    2: ("generateName", "str"),
    3: ("namespace", "str"),
    5: ("uid", "str"),
    6: ("resourceVersion", "str"),
    7: ("generation", "int0"),
    8: ("creationTimestamp", "time"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    13: ("ownerReferences", ("list", _OWNER)),
    14: ("finalizers", "strs"),
}
_RULE: Schema = {
    1: ("verbs", "strs"),
    2: ("apiGroups", "strs"),
    3: ("resources", "strs"),
    4: ("resourceNames", "strs"),
    5: ("nonResourceURLs", "strs"),
}
_SUBJECT: Schema = {
    1: ("kind", "str"),
    2: ("apiGroup", "str"),
    3: ("name", "str"),
    4: ("namespace", "str"),
}
_ROLE_REF: Schema = {1: ("apiGroup", "str"), 2: ("kind", "str"), 3: ("name", "str")}
_NAME_REF: Schema = {1: ("name", "str")}
_RESOURCE_ATTRS: Schema = {
    1: ("namespace", "str"),
    2: ("verb", "str"),
    3: ("group", "str"),
    4: ("version", "str"),
    5: ("resource", "str"),
    6: ("subresource", "str"),
    7: ("name", "str"),
}
_NON_RESOURCE_ATTRS: Schema = {1: ("path", "str"), 2: ("verb", "str")}

_SELECTOR: Schema = {
    1: ("matchLabels", "map"),
    2: (
        "matchExpressions",
        ("list", {1: ("key", "str"), 2: ("operator", "str"), 3: ("values", "strs")}),
    ),
}
_CONTAINER: Schema = {
    1: ("name", "str"),
    2: ("image", "str"),
    3: ("command", "strs"),
    4: ("args", "strs"),
    5: ("workingDir", "str"),
    6: (
        "ports",
        (
            "list",
            {
                1: ("name", "str"),
                2: ("hostPort", "int0"),
                3: ("containerPort", "int"),
                4: ("protocol", "str"),
            },
        ),
    ),
    7: ("env", ("list", {1: ("name", "str"), 2: ("value", "str")})),
    8: ("resources", {}),
    14: ("imagePullPolicy", "str"),
}
_POD_TEMPLATE: Schema = {
    1: ("metadata", _META),
    2: (
        "spec",
        {
            2: ("containers", ("list", _CONTAINER)),
            3: ("restartPolicy", "str"),
            8: ("serviceAccountName", "str"),
        },
    ),
}
_DEPLOYMENT_SPEC: Schema = {
    1: ("replicas", "int"),
    2: ("selector", _SELECTOR),
    3: ("template", _POD_TEMPLATE),
    4: ("strategy", {1: ("type", "str")}),
    5: ("minReadySeconds", "int0"),
    6: ("revisionHistoryLimit", "int"),
    7: ("paused", "bool0"),
    9: ("progressDeadlineSeconds", "int"),
}

SCHEMAS: dict[str, Schema] = {
    "Deployment": {1: ("metadata", _META), 2: ("spec", _DEPLOYMENT_SPEC)},
    "ConfigMap": {
        1: ("metadata", _META),
        2: ("data", "map"),
        3: ("binaryData", "bytesmap"),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", _META),
        2: ("data", "bytesmap"),
        3: ("type", "str"),
        4: ("stringData", "map"),
        5: ("immutable", "bool"),
    },
    "Namespace": {1: ("metadata", _META), 2: ("spec", {1: ("finalizers", "strs")})},
    "ServiceAccount": {
        1: ("metadata", _META),
        2: ("secrets", ("list", _NAME_REF)),
        3: ("imagePullSecrets", ("list", _NAME_REF)),
        4: ("automountServiceAccountToken", "bool"),
    },
    "Role": {1: ("metadata", _META), 2: ("rules", ("list", _RULE))},
    "RoleBinding": {
        1: ("metadata", _META),
        2: ("subjects", ("list", _SUBJECT)),
        3: ("roleRef", _ROLE_REF),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", _META),
        2: (
            "spec",
            {
                1: ("resourceAttributes", _RESOURCE_ATTRS),
                2: ("nonResourceAttributes", _NON_RESOURCE_ATTRS),
            },
        ),
    },
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while pos < len(data):
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise bad_request("protobuf: truncated varint")


def _raw_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint value or bytes) in wire order; fixed-width fields skipped."""
    found: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            found.append((number, value))
        elif wire == _BYTES:
            size, pos = _varint(data, pos)
            found.append((number, data[pos : pos + size]))
            pos += size
        else:
            pos += 8 if wire == _FIXED64 else 4
    return found


def _entry(data: bytes) -> tuple[str, bytes]:
    parts = {n: v for n, v in _raw_fields(data) if isinstance(v, bytes)}
    return parts.get(1, b"").decode("utf-8"), parts.get(2, b"")


def _time(data: bytes) -> str | None:
    seconds = dict(_raw_fields(data)).get(1, 0)
    if not isinstance(seconds, int) or seconds == 0:
        return None
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _scalar(reader: str, value: int | bytes) -> Any:
    if reader in ("int", "int0"):  # int0: a plain Go int, omitted from JSON when zero
        return None if reader == "int0" and value == 0 else value
    if reader in ("bool", "bool0"):  # bool0: a plain Go bool, omitted from JSON when false
        return bool(value) if value or reader == "bool" else None
    assert isinstance(value, bytes)
    return _time(value) if reader == "time" else value.decode("utf-8")


def _add(out: dict[str, Any], name: str, reader: Reader, value: int | bytes) -> None:
    if isinstance(reader, tuple):
        assert isinstance(value, bytes)
        out.setdefault(name, []).append(decode_message(value, reader[1]))
    elif isinstance(reader, Mapping):
        assert isinstance(value, bytes)
        out[name] = decode_message(value, reader)
    elif reader in ("map", "bytesmap"):
        assert isinstance(value, bytes)
        key, raw = _entry(value)
        text = base64.b64encode(raw).decode() if reader == "bytesmap" else raw.decode("utf-8")
        out.setdefault(name, {})[key] = text
    elif reader == "strs":
        assert isinstance(value, bytes)
        out.setdefault(name, []).append(value.decode("utf-8"))
    else:
        out[name] = _scalar(reader, value)


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    """One message as JSON-shaped data; unknown fields are ignored, empty strings dropped."""
    out: dict[str, Any] = {}
    for number, value in _raw_fields(data):
        if number in schema:
            name, reader = schema[number]
            _add(out, name, reader, value)
    return {k: v for k, v in out.items() if v not in ("", None)}


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object of a kind in ``SCHEMAS`` as the JSON dict clients send."""
    if not body.startswith(_MAGIC):
        raise bad_request("provided protobuf data is missing the k8s magic prefix")
    envelope = {n: v for n, v in _raw_fields(body[len(_MAGIC) :]) if isinstance(v, bytes)}
    type_meta = {n: v for n, v in _raw_fields(envelope.get(1, b"")) if isinstance(v, bytes)}
    api_version = type_meta.get(1, b"").decode("utf-8")
    kind = type_meta.get(2, b"").decode("utf-8")
    schema = SCHEMAS.get(kind)
    if schema is None:
        raise bad_request(f"protobuf bodies of kind {kind!r} are not supported by this server")
    return {"apiVersion": api_version, "kind": kind, **decode_message(envelope.get(2, b""), schema)}
