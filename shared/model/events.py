"""Object events: what the watcher hands a branch, one per API change (M1-M2).

An event carries the sanitised object (so the branch worker never reads the API), its
identity and uid, the operation, and the latest ``managedFields`` entries (manager, operation,
time), which the apply window needs (W1). Events travel as flat string fields in a Redis
stream; ``to_fields``/``from_fields`` are the only codec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from shared.model.ids import GitTargetUid, ObjectId

Operation = Literal["CREATE", "UPDATE", "DELETE"]
OPERATIONS: tuple[Operation, ...] = ("CREATE", "UPDATE", "DELETE")


@dataclass(frozen=True, slots=True)
class ManagerEntry:
    """One ``managedFields`` entry, reduced to what the apply window reads."""

    manager: str
    operation: str
    time: str


@dataclass(frozen=True, slots=True)
class GitTargetRef:
    """The GitTarget an event belongs to, by incarnation (uid) and by name."""

    uid: GitTargetUid
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class ObjectEvent:
    """One API-side change of one object, for one GitTarget."""

    target: GitTargetRef
    operation: Operation
    object_id: ObjectId
    uid: str
    resource_version: str
    body: dict[str, Any] | None  # sanitised object; None for a DELETE
    managers: tuple[ManagerEntry, ...]
    observed_at: float
    #: A sensitive kind (a Secret): body holds only apiVersion, kind and metadata, never data,
    #: and the branch worker refuses it (M10).
    sensitive: bool = False
    #: W2: the managers that made this write, by the watch's order (the watcher compared the
    #: object's newest ``managedFields`` entries with the write it delivered before:
    #: ``shared.decide.apply_window.writers_of``); None when that order cannot say.
    writers: tuple[str, ...] | None = None
    #: JSON pointers of the fields whose value in Git is kept (a rule's ignoreDifferences,
    #: its managers' fields found in managedFields; ``shared.decide.differences``).
    ignored: tuple[str, ...] = ()

    def to_fields(self) -> dict[str, str]:
        """Flat string fields for a Redis stream entry."""
        oid = self.object_id
        fields = self._fields(oid)
        if self.writers is not None:
            fields["writers"] = json.dumps(list(self.writers))
        if self.ignored:
            fields["ignored"] = json.dumps(list(self.ignored))
        return fields

    def _fields(self, oid: ObjectId) -> dict[str, str]:
        return {
            "target": json.dumps([self.target.uid, self.target.namespace, self.target.name]),
            "op": self.operation,
            "id": json.dumps(
                [oid.group, oid.version, oid.resource, oid.kind, oid.namespace, oid.name]
            ),
            "uid": self.uid,
            "rv": self.resource_version,
            "body": json.dumps(self.body, sort_keys=True),
            "managers": json.dumps([[m.manager, m.operation, m.time] for m in self.managers]),
            "at": repr(self.observed_at),
            "sensitive": "1" if self.sensitive else "",
        }

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> ObjectEvent:
        """The inverse of ``to_fields``; raises ValueError on a malformed entry."""
        try:
            uid, namespace, name = json.loads(fields["target"])
            operation = fields["op"]
            if operation not in OPERATIONS:
                raise ValueError(f"unknown operation {operation!r}")
            return cls(
                target=GitTargetRef(GitTargetUid(uid), namespace, name),
                operation=operation,
                object_id=ObjectId(*json.loads(fields["id"])),
                uid=fields["uid"],
                resource_version=fields["rv"],
                body=json.loads(fields["body"]),
                managers=tuple(ManagerEntry(*m) for m in json.loads(fields["managers"])),
                observed_at=float(fields["at"]),
                sensitive=bool(fields.get("sensitive")),
                writers=_writers(fields.get("writers")),
                ignored=tuple(str(p) for p in json.loads(fields.get("ignored") or "[]")),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"malformed object event: {err}") from err

    @property
    def coalesce_key(self) -> str:
        """The object (for this GitTarget incarnation) whose latest event replaces its older
        ones in the stream (U1): the API value wins whole (M5), so only the newest counts."""
        oid = self.object_id
        return json.dumps([self.target.uid, oid.group, oid.kind, oid.namespace, oid.name])


#: The ``op`` field of a listing entry; workers that predate it drop it as malformed.
LISTED = "LISTED"


@dataclass(frozen=True, slots=True)
class Listing:
    """What a watch that started without any state found (D2): the names of every object of
    one type in one namespace, as a list returned them. A document of that type and namespace
    in the GitTarget's folder whose name is not here is an object deleted while no watch (or no
    Redis) recorded it, and the branch worker deletes it (prune ``OnEvent`` and ``Always``)."""

    target: GitTargetRef
    resource: ObjectId  # group, version, resource, kind, namespace; name ""
    names: frozenset[str]
    observed_at: float

    def to_fields(self) -> dict[str, str]:
        """Flat string fields for a Redis stream entry."""
        r = self.resource
        return {
            "target": json.dumps([self.target.uid, self.target.namespace, self.target.name]),
            "op": LISTED,
            "id": json.dumps([r.group, r.version, r.resource, r.kind, r.namespace, ""]),
            "names": json.dumps(sorted(self.names)),
            "at": repr(self.observed_at),
        }

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Listing:
        """The inverse of ``to_fields``; raises ValueError on a malformed entry."""
        try:
            uid, namespace, name = json.loads(fields["target"])
            if fields["op"] != LISTED:
                raise ValueError(f"not a listing: {fields['op']!r}")
            names = json.loads(fields["names"])
            if not isinstance(names, list):
                raise ValueError("names is not a list")
            return cls(
                target=GitTargetRef(GitTargetUid(uid), namespace, name),
                resource=ObjectId(*json.loads(fields["id"])),
                names=frozenset(str(n) for n in names),
                observed_at=float(fields["at"]),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ValueError(f"malformed listing: {err}") from err

    @property
    def coalesce_key(self) -> str:
        """A newer listing of the same watch replaces an older one (U1)."""
        r = self.resource
        return json.dumps([self.target.uid, LISTED, r.group, r.resource, r.namespace])


def latest_managers(managed_fields: list[dict[str, Any]] | None) -> tuple[ManagerEntry, ...]:
    """The entries that share the newest ``time`` (ties matter to W2), newest first."""
    entries = [
        ManagerEntry(str(e.get("manager", "")), str(e.get("operation", "")), str(e.get("time", "")))
        for e in managed_fields or []
    ]
    if not entries:
        return ()
    newest = max(e.time for e in entries)
    return tuple(e for e in entries if e.time == newest)


def _writers(text: str | None) -> tuple[str, ...] | None:
    """An event's ``writers`` field (absent: None; written before W2's facts existed)."""
    if text is None:
        return None
    names = json.loads(text)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise TypeError("writers must be a list of manager names")
    return tuple(names)
