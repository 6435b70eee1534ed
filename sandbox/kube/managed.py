"""``metadata.managedFields`` of the API double: who set which field, when, and how.

Why it exists: the product decides from ``managedFields`` whether a write was an applier's
(the apply window, spec §8), so the sandbox must keep them as kube-apiserver does. It follows
k8s.io/apimachinery ``pkg/util/managedfields/internal`` and sigs.k8s.io/structured-merge-diff
``merge/update.go``:

- one entry per manager *identity*: (manager, ``Update``, apiVersion, subresource) or
  (manager, ``Apply``, subresource) (``BuildManagerIdentifier``); entries are sorted by
  operation, time, manager, apiVersion, subresource (``sortEncodedManagedFields``);
- an Update (create, update, patch) gives its manager the fields it added or modified and takes
  them from every other entry; removed fields leave every entry; an entry left empty is dropped;
  the writer's entry gets ``time`` = now at one-second granularity only when it took a field
  (``managedFieldsUpdater``). Untouched entries are kept as they were.
- the managedFields sent with an update replace the stored ones when they decode and are not
  empty; ``[{}]`` resets them; a subresource write always starts from the stored ones
  (``decodeLiveOrNew``);
- an Apply merges the configuration into the live object, conflicts with any other entry owning
  a field it changes (409, or with ``force`` takes the field), co-owns fields it sets to their
  current value, and removes fields it applied before and no longer applies unless some entry
  still owns them (``Updater.Apply``/``prune``).

Simplifications (see ``fieldsets``): list semantics come from a small per-kind table, so lists
of custom resources are atomic; nulls in an apply configuration are ignored; an object's apply
entry is not capped or merged into ``ancient-changes`` (``capManagers``); the server itself
decides no-ops (it compares objects without managedFields timestamps, as
``IgnoreManagedFieldsTimestampsTransformer`` does) and strips ``status`` from an apply sent to a
kind with a status subresource.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from sandbox.kube import fieldsets
from sandbox.kube.errors import ApiError
from sandbox.kube.fieldsets import STRIPPED, Path
from sandbox.kube.patcherrors import bad_request

#: apimachinery meta/v1 validation ``FieldManagerMaxLength``.
FIELD_MANAGER_MAX_LENGTH = 128


class ApplyConflict(ApiError):
    """An apply would change fields other managers own; the server answers 409 Conflict.

    ``conflicts`` lists (other manager, field path). ``message`` and ``causes`` are worded as
    apimachinery managedfields ``internal/conflict.go`` words them, e.g. 'Apply failed with 1
    conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas' (an Update entry
    names its apiVersion, an Apply entry only its manager).
    """

    def __init__(
        self, conflicts: list[tuple[str, str]], message: str, causes: list[dict[str, str]]
    ) -> None:
        super().__init__(409, "Conflict", message, details={"causes": causes})
        self.conflicts = conflicts
        self.causes = causes


def manager_from_user_agent(user_agent: str) -> str:
    """apiserver ``prefixFromUserAgent``: text before the first "/", printable, <= 128 bytes."""
    manager, size = [], 0
    for char in user_agent.split("/", 1)[0]:
        if not char.isprintable():
            continue
        size += len(char.encode("utf-8"))
        if size > FIELD_MANAGER_MAX_LENGTH:
            break
        manager.append(char)
    return "".join(manager)


@dataclass(frozen=True, slots=True)
class _Entry:
    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: frozenset[Path]
    raw: dict[str, Any] | None = None

    @property
    def identity(self) -> tuple[str, str, str, str]:
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def to_json(self) -> dict[str, Any]:
        if self.raw is not None:
            return copy.deepcopy(self.raw)
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
        }
        if self.time is not None:
            entry["time"] = self.time
        entry.update(fieldsType="FieldsV1", fieldsV1=fieldsets.encode(self.fields))
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def _decode_entry(raw: Any) -> _Entry:
    if not isinstance(raw, dict) or raw.get("operation") not in ("Apply", "Update"):
        raise ValueError("operation must be `Apply` or `Update`")
    if not raw.get("apiVersion") or raw.get("fieldsType") != "FieldsV1":
        raise ValueError("apiVersion and fieldsType FieldsV1 are required")
    fields = frozenset(fieldsets.decode(raw.get("fieldsV1") or {}))
    return _Entry(
        str(raw.get("manager", "")),
        raw["operation"],
        str(raw["apiVersion"]),
        str(raw.get("subresource", "")),
        raw.get("time"),
        fields,
        raw,
    )


def _decode_entries(raw: Any) -> list[_Entry]:
    """Entries by identity (a later duplicate wins); ValueError when any does not decode."""
    if not isinstance(raw, list):
        raise ValueError("managedFields must be a list")
    by_identity = {entry.identity: entry for entry in map(_decode_entry, raw)}
    return list(by_identity.values())


def _stored(obj: dict[str, Any] | None) -> list[_Entry]:
    try:
        return _decode_entries(((obj or {}).get("metadata") or {}).get("managedFields") or [])
    except ValueError:
        return []


def _starting_entries(
    old: dict[str, Any] | None, new: dict[str, Any], subresource: bool
) -> list[_Entry]:
    if subresource:
        return _stored(old)
    given = (new.get("metadata") or {}).get("managedFields")
    if given == [{}]:
        return []
    try:
        decoded = _decode_entries(given or [])
    except ValueError:
        decoded = []
    return decoded or _stored(old)


def _sort_key(entry: _Entry) -> tuple[str, float, str, str, str]:
    try:
        seconds = datetime.fromisoformat(str(entry.time).replace("Z", "+00:00")).timestamp()
    except ValueError:
        seconds = 0.0
    return (entry.operation, seconds, entry.manager, entry.api_version, entry.subresource)


def _encode(entries: Iterable[_Entry]) -> list[dict[str, Any]]:
    return [entry.to_json() for entry in sorted(entries, key=_sort_key)]


def _stamp(now: datetime) -> str:
    """RFC 3339 in UTC at one-second granularity, as ``metav1.Time`` marshals."""
    moment = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _without(entries: Iterable[_Entry], taken: set[Path]) -> list[_Entry]:
    """Each entry minus ``taken``; entries left empty are dropped, untouched ones kept."""
    kept = []
    for entry in entries:
        remaining = entry.fields - taken
        if remaining == entry.fields:
            kept.append(entry)
        elif remaining:
            kept.append(replace(entry, fields=remaining, raw=None))
    return kept


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(obj)
    if isinstance(result.get("metadata"), dict):
        result["metadata"].pop("managedFields", None)
    return result


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    now: datetime,
    subresource: str | None = None,
) -> list[dict[str, Any]]:
    """The managedFields to store on ``new`` after ``manager`` wrote it (operation Update)."""
    schema = fieldsets.schema_for(new)
    entries = _starting_entries(old, new, subresource is not None)
    before = _comparable(old) if old is not None else fieldsets.empty_object(new)
    diff = fieldsets.compare(before, _comparable(new), schema)
    taken = (diff.added | diff.modified) - STRIPPED
    kept = _without(entries, taken | diff.removed)
    if taken:
        mine = _Entry(
            manager, "Update", api_version, subresource or "", _stamp(now), frozenset(taken)
        )
        previous = next((e for e in kept if e.identity == mine.identity), None)
        if previous is not None:
            kept.remove(previous)
            mine = replace(mine, fields=mine.fields | previous.fields)
        kept.append(mine)
    return _encode(kept)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    now: datetime,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` (created when ``live`` is None)."""
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    schema = fieldsets.schema_for(applied)
    config = _without_nulls(copy.deepcopy(applied))
    base = _comparable(live) if live is not None else {}
    mine = _Entry(
        manager,
        "Apply",
        api_version,
        "",
        _stamp(now),
        frozenset(fieldsets.apply_set(config, schema)),
    )
    entries = _stored(live)
    previous = next((e.fields for e in entries if e.identity == mine.identity), frozenset())
    others = [e for e in entries if e.identity != mine.identity]
    merged: dict[str, Any] = fieldsets.merge(base, config, schema)
    owned = set(mine.fields).union(*(e.fields for e in others))
    fieldsets.remove_unowned(merged, previous - mine.fields, owned)
    diff = fieldsets.compare(
        base if live is not None else fieldsets.empty_object(applied), merged, schema
    )
    changed = diff.added | diff.modified
    conflicts = [(e, p) for e in others for p in fieldsets.ordered(e.fields & changed)]
    if conflicts and not force:
        raise _conflict(conflicts)
    kept = _without(others, changed | diff.removed) + ([mine] if mine.fields else [])
    merged.setdefault("metadata", {})["managedFields"] = _encode(kept)
    return merged


def _who(entry: _Entry) -> str:
    """``printManager``: an Update entry also names the apiVersion it wrote with."""
    name = json.dumps(entry.manager, ensure_ascii=False)
    return f"{name} using {entry.api_version}" if entry.operation == "Update" else name


def _identifier(entry: _Entry) -> str:
    """The JSON manager identifier upstream groups and sorts conflicts by."""
    ident = {"manager": entry.manager, "operation": entry.operation}
    if entry.operation == "Update":
        ident["apiVersion"] = entry.api_version
    if entry.subresource:
        ident["subresource"] = entry.subresource
    return json.dumps(ident, separators=(",", ":"))


def _conflict(found: list[tuple[_Entry, Path]]) -> ApplyConflict:
    found = sorted(found, key=lambda c: _identifier(c[0]))
    pairs = [(entry.manager, fieldsets.path_string(path)) for entry, path in found]
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_who(entry)}",
            "field": fieldsets.path_string(path),
        }
        for entry, path in found
    ]
    if len(found) == 1:
        entry, path = found[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_who(entry)}: "
            f"{fieldsets.path_string(path)}"
        )
        return ApplyConflict(pairs, message, causes)
    lines: list[str] = []
    for index, (entry, path) in enumerate(found):
        if index == 0 or found[index - 1][0] is not entry:
            lines.append(f"conflicts with {_who(entry)}:")
        lines.append(f"- {fieldsets.path_string(path)}")
    message = f"Apply failed with {len(found)} conflicts: " + "\n".join(lines)
    return ApplyConflict(pairs, message, causes)
