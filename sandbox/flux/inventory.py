"""``status.inventory`` of a Kustomization: what it applied, and what dropped out since.

Entries are ``{id: <namespace>_<name>_<group>_<kind>, v: <version>}`` (empty namespace for
cluster-scoped objects, empty group for the core group; ../shared/facts/appliers.md F3). The
inventory is replaced after every successful apply; the entries of the old inventory that are
not in the new one are the stale objects ``spec.prune`` garbage-collects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Entry:
    """One applied object, as an inventory entry names it."""

    namespace: str
    name: str
    group: str
    kind: str
    version: str

    @property
    def id(self) -> str:
        """``<namespace>_<name>_<group>_<kind>``."""
        return f"{self.namespace}_{self.name}_{self.group}_{self.kind}"

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def to_json(self) -> dict[str, str]:
        """The entry as ``status.inventory.entries[]`` holds it."""
        return {"id": self.id, "v": self.version}


def entry_of(obj: dict[str, Any]) -> Entry:
    """The inventory entry of an object."""
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    meta = obj["metadata"]
    return Entry(meta.get("namespace", "") or "", meta["name"], group, obj["kind"], version)


def parse(raw: dict[str, Any]) -> Entry | None:
    """An entry from its JSON form; None if the id is not ``ns_name_group_kind``."""
    parts = str(raw.get("id", "")).split("_")
    if len(parts) != 4:
        return None
    namespace, name, group, kind = parts
    return Entry(namespace, name, group, kind, str(raw.get("v", "")))


def entries_of(status: dict[str, Any]) -> list[Entry]:
    """The entries of a Kustomization status (none when it has no inventory)."""
    raw = (status.get("inventory") or {}).get("entries") or []
    return [entry for entry in (parse(item) for item in raw) if entry is not None]


def to_status(entries: list[Entry]) -> dict[str, Any]:
    """``status.inventory`` for ``entries``, sorted by id as the controller keeps them."""
    unique = {entry.id: entry for entry in entries}
    return {"entries": [unique[key].to_json() for key in sorted(unique)]}


def stale(old: list[Entry], new: list[Entry]) -> list[Entry]:
    """Entries of ``old`` whose object is not in ``new`` (matched by id, any version)."""
    kept = {entry.id for entry in new}
    return [entry for entry in old if entry.id not in kept]
