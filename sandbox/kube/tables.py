"""``as=Table`` responses, the server-side printing kubectl get asks for.

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and prints whatever
columns come back. Built-ins get the columns of pkg/printers/internalversion (NAME, then
DATA for ConfigMaps and Secrets, STATUS for Namespaces, ..., AGE; LAST SEEN, TYPE, REASON,
OBJECT, MESSAGE for Events); a custom resource gets
NAME plus its version's additionalPrinterColumns, or NAME and AGE when it declares none
(apiextensions tableconvertor.go and ``serveDefaultColumnsIfEmpty``). Each row carries the
object's metadata as a PartialObjectMetadata, the default ``includeObject=Metadata``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sandbox.kube.resources import ResourceType

Obj = dict[str, Any]
Cell = Callable[[Obj, datetime], Any]
Column = tuple[Obj, Cell]

_NAME_DESC = "Name must be unique within a namespace."
_AGE_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)
_FILTER_RE = re.compile(r'^\[\?\(@\.([\w.-]+)\s*==\s*["\']([^"\']*)["\']\)\]')
_SEGMENT_RE = re.compile(r"^\.([\w-]+)|^\[(\d+)\]")


def human_duration(seconds: float) -> str:
    """The age string of k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes, hours = s // 60, s // 3600
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    return _long_duration(hours)


def _long_duration(hours: int) -> str:
    days = hours // 24
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        years, rest = days // 365, days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{days // 365}y"


def age(timestamp: str | None, now: datetime) -> str:
    """Age of an RFC 3339 timestamp at ``now``, or ``<unknown>``."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    return human_duration((now - then).total_seconds())


def jsonpath(obj: Any, path: str) -> Any:
    """The first value at a simple JSONPath (``.a.b``, ``[0]``, ``[?(@.type=="Ready")]``)."""
    value, rest = obj, path.strip().strip("{}")
    while rest:
        match = _FILTER_RE.match(rest)
        if match:
            key, wanted = match.groups()
            items = value if isinstance(value, list) else []
            value = next((i for i in items if str(jsonpath(i, "." + key)) == wanted), None)
        else:
            match = _SEGMENT_RE.match(rest)
            if match is None:
                return None
            value = _step(value, match.group(1), match.group(2))
        if value is None:
            return None
        rest = rest[match.end() :]
    return value


def _step(value: Any, key: str | None, index: str | None) -> Any:
    if key is not None:
        return value.get(key) if isinstance(value, dict) else None
    position = int(index or 0)
    return value[position] if isinstance(value, list) and position < len(value) else None


def _custom_cell(column: dict[str, Any]) -> Cell:
    kind = column.get("type", "string")

    def cell(obj: Obj, now: datetime) -> Any:
        value = jsonpath(obj, column["jsonPath"])
        if value is None:
            return None
        if kind == "date":
            return age(value, now) if isinstance(value, str) else None
        if kind == "string" and isinstance(value, dict | list):
            return str(value)
        return value

    return cell


def _column(
    name: str, kind: str = "string", fmt: str = "", desc: str = "", priority: int = 0
) -> Obj:
    return {"name": name, "type": kind, "format": fmt, "description": desc, "priority": priority}


_NAME = (_column("Name", fmt="name", desc=_NAME_DESC), lambda o, n: o["metadata"]["name"])
_AGE = (_column("Age", desc=_AGE_DESC), lambda o, n: age(o["metadata"].get("creationTimestamp"), n))


def _event_last_seen(obj: Obj, now: datetime) -> str:
    series = obj.get("series") or {}
    seen = (
        series.get("lastObservedTime")
        or obj.get("lastTimestamp")
        or obj.get("deprecatedLastTimestamp")
        or obj.get("eventTime")
    )
    return age(seen, now)


def _event_object(obj: Obj, now: datetime) -> str:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


_EVENT_COLUMNS: list[Column] = [
    (_column("Last Seen"), _event_last_seen),
    (_column("Type"), lambda o, n: o.get("type", "")),
    (_column("Reason"), lambda o, n: o.get("reason", "")),
    (_column("Object"), _event_object),
    (_column("Message"), lambda o, n: o.get("message", o.get("note", ""))),
    (_column("Name", fmt="name", desc=_NAME_DESC, priority=1), lambda o, n: o["metadata"]["name"]),
]


_BUILTIN_COLUMNS: dict[tuple[str, str], list[Column]] = {
    ("", "Event"): _EVENT_COLUMNS,
    ("events.k8s.io", "Event"): _EVENT_COLUMNS,
    ("", "ConfigMap"): [
        _NAME,
        (
            _column("Data", "integer"),
            lambda o, n: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
        ),
        _AGE,
    ],
    ("", "Secret"): [
        _NAME,
        (_column("Type"), lambda o, n: o.get("type", "")),
        (_column("Data", "integer"), lambda o, n: len(o.get("data") or {})),
        _AGE,
    ],
    ("", "Namespace"): [
        _NAME,
        (_column("Status"), lambda o, n: (o.get("status") or {}).get("phase", "")),
        _AGE,
    ],
    ("", "Service"): [_NAME, (_column("Type"), lambda o, n: o["spec"].get("type", "")), _AGE],
    ("apps", "Deployment"): [
        _NAME,
        (
            _column("Ready"),
            lambda o, n: (
                f"{(o.get('status') or {}).get('readyReplicas', 0)}/"
                f"{(o.get('spec') or {}).get('replicas', 0)}"
            ),
        ),
        (
            _column("Up-to-date", "integer"),
            lambda o, n: (o.get("status") or {}).get("updatedReplicas", 0),
        ),
        (
            _column("Available", "integer"),
            lambda o, n: (o.get("status") or {}).get("availableReplicas", 0),
        ),
        _AGE,
    ],
}


def _columns(rtype: ResourceType) -> Sequence[Column]:
    if rtype.custom:
        defined = rtype.printer_columns or (
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        )
        return [_NAME, *((_custom_definition(c), _custom_cell(dict(c))) for c in defined)]
    default: list[Column] = [_NAME, _AGE]
    return _BUILTIN_COLUMNS.get((rtype.group, rtype.kind), default)


def _custom_definition(column: Any) -> Obj:
    desc = column.get("description") or (
        f"Custom resource definition column (in JSONPath format): {column['jsonPath']}"
    )
    return _column(
        column["name"],
        column.get("type", "string"),
        column.get("format", ""),
        desc,
        column.get("priority", 0),
    )


def _partial(obj: Obj) -> Obj:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj["metadata"],
    }


def to_table(rtype: ResourceType, items: Sequence[Obj], now: datetime, rv: str | None) -> Obj:
    """A meta.k8s.io/v1 Table of ``items`` with the kind's columns."""
    columns = _columns(rtype)
    rows = [{"cells": [cell(o, now) for _, cell in columns], "object": _partial(o)} for o in items]
    metadata: Obj = {"resourceVersion": rv} if rv else {}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [definition for definition, _ in columns],
        "rows": rows,
    }


def wants_table(accept: str | None) -> bool:
    """True when the Accept header asks for ``as=Table`` first."""
    if not accept:
        return False
    first = accept.split(",")[0].replace(" ", "")
    return "as=Table" in first and "g=meta.k8s.io" in first
