"""Compare: the rendered folder against the live objects, as pure functions.

Facts: ../shared/facts/appliers.md A4 (``status.sync`` is ``Synced``/``OutOfSync`` against the
revision ``targetRevision`` resolved to, ``comparedTo`` the source and destination compared)
and A5 (tracking by the annotation ``argocd.argoproj.io/tracking-id``, whose value is
``<app>:<group>/<Kind>:<namespace>/<name>``, ../shared/facts/upstream-gitops-reverser.md
"Argo tracking").

The double's diff is simpler than Argo CD's (which normalises with the last-applied
configuration and known defaulted fields): a live object is Synced when every field the
desired object sets (the tracking annotation included) has that value live. An object the
Application tracks (its annotation names this Application) that the folder no longer holds is
OutOfSync with ``requiresPruning``.
"""

from __future__ import annotations

import copy
from typing import Any

from sandbox.argocd.policy import OUT_OF_SYNC, SYNCED

TRACKING_ID = "argocd.argoproj.io/tracking-id"


def tracking_id(app_name: str, obj: dict[str, Any]) -> str:
    """``<app>:<group>/<Kind>:<namespace>/<name>`` for ``obj`` (an empty part stays empty)."""
    group = str(obj["apiVersion"]).rpartition("/")[0]
    meta = obj["metadata"]
    return f"{app_name}:{group}/{obj['kind']}:{meta.get('namespace', '') or ''}/{meta['name']}"


def tracked(app_name: str, desired: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the desired objects carrying the Application's tracking annotation."""
    stamped = []
    for obj in desired:
        copied = copy.deepcopy(obj)
        meta = copied["metadata"]
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            TRACKING_ID: tracking_id(app_name, copied),
        }
        stamped.append(copied)
    return stamped


def owned_by(app_name: str, live: dict[str, Any] | None) -> bool:
    """Whether the live object's tracking annotation names ``app_name``."""
    if live is None:
        return False
    value = ((live.get("metadata") or {}).get("annotations") or {}).get(TRACKING_ID, "")
    return isinstance(value, str) and value.split(":", 1)[0] == app_name


def contains(live: Any, desired: Any) -> bool:
    """Whether ``live`` holds every value ``desired`` sets (lists element by element)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(
            key in live and contains(live[key], value) for key, value in desired.items()
        )
    if isinstance(desired, list):
        return (
            isinstance(live, list)
            and len(live) == len(desired)
            and all(contains(a, b) for a, b in zip(live, desired, strict=True))
        )
    return bool(live == desired)


def synced(desired: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """A desired object is Synced when it exists live with every field it sets."""
    if live is None:
        return False
    wanted = {key: value for key, value in desired.items() if key != "status"}
    return contains(live, wanted)


def resource_status(
    obj: dict[str, Any], status: str, requires_pruning: bool = False
) -> dict[str, Any]:
    """One ``status.resources[]`` entry."""
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    meta = obj["metadata"]
    entry: dict[str, Any] = {
        "group": group,
        "version": version,
        "kind": obj["kind"],
        "namespace": meta.get("namespace", "") or "",
        "name": meta["name"],
        "status": status,
    }
    if requires_pruning:
        entry["requiresPruning"] = True
    return entry


def overall(resources: list[dict[str, Any]]) -> str:
    """``Synced`` when every resource is, else ``OutOfSync``."""
    return SYNCED if all(r["status"] == SYNCED for r in resources) else OUT_OF_SYNC


def api_version(entry: dict[str, Any]) -> str:
    """``group/version`` of a ``status.resources[]`` entry (``version`` for the core group)."""
    group, version = entry.get("group", ""), entry.get("version", "")
    return f"{group}/{version}" if group else str(version)
