"""``gitops-reverser get targets|providers|rules``: Flux's ``flux get`` for this product.

Each row says whether the object is Ready and why (its Ready message, in the default columns,
as Flux shows it), and for a GitTarget what only Redis knows: when its branch last pushed and
what its applier is owed for it now (the ``inspect`` report's "owed", by GitTarget).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from services.branch_worker.stores import Stores
from services.cli.context import Context
from services.cli.output import Record, emit
from shared.kube.kinds import CLUSTER_WATCH_RULES, GIT_PROVIDERS, GIT_TARGETS, WATCH_RULES
from shared.model.ids import GitTargetUid

TARGET_COLUMNS = {
    "namespace": "NAMESPACE",
    "name": "NAME",
    "ready": "READY",
    "status": "STATUS",
    "suspended": "SUSPENDED",
    "lastPushAge": "LAST PUSH",
    "owed": "OWED",
}
PROVIDER_COLUMNS = {
    "namespace": "NAMESPACE",
    "name": "NAME",
    "url": "URL",
    "ready": "READY",
    "status": "STATUS",
}
RULE_COLUMNS = {
    "kind": "KIND",
    "namespace": "NAMESPACE",
    "name": "NAME",
    "target": "TARGET",
    "ready": "READY",
    "status": "STATUS",
}
#: What the Redis columns read when Redis could not be reached (a warning says why).
UNKNOWN = "?"


def age(seconds: float) -> str:
    """kubectl's short age: 42s, 5m, 3h, 2d."""
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def ready_of(obj: Mapping[str, Any]) -> tuple[str, str]:
    """The Ready condition's status and what it says (its message, else its reason)."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return str(cond.get("status", "Unknown")), str(
                cond.get("message") or cond.get("reason") or ""
            )
    return "Unknown", "waiting for the watcher"


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return str(meta.get("namespace", "")), str(meta["name"])


def _redis_columns(stores: Stores | None, uid: GitTargetUid, now: float) -> Record:
    if stores is None:
        return {"lastPush": None, "lastPushAge": UNKNOWN, "owed": UNKNOWN, "branch": None}
    config = stores.configs.target(uid)
    if config is None:
        return {"lastPush": None, "lastPushAge": "", "owed": "not served", "branch": None}
    state = stores.states.read(config.ref.key)
    pushed = state.pushed_at
    owed = "nothing"
    if config.applier is not None:
        applier = stores.appliers.load(config.applier.key, config.applier.kind)
        reasons = sorted(r for r, uids in applier.owes().items() if str(uid) in uids)
        owed = "+".join(reasons) if reasons else "nothing"
    return {
        "branch": {"url": config.url, "name": config.branch, "tip": state.observed_tip},
        "lastPush": datetime.fromtimestamp(pushed, UTC).isoformat() if pushed else None,
        "lastPushAge": f"{age(now - pushed)} ago" if pushed else "never",
        "owed": owed,
    }


def target_rows(ctx: Context) -> list[Record]:
    """One record per GitTarget in the namespace (or all)."""
    items = ctx.kube.list(GIT_TARGETS, ctx.list_namespace()).items
    stores = ctx.optional_stores() if items else None
    now = ctx.clock().timestamp()
    rows: list[Record] = []
    for obj in sorted(items, key=_meta):
        namespace, name = _meta(obj)
        ready, status = ready_of(obj)
        applier = (obj.get("status") or {}).get("applier") or {}
        row: Record = {
            "namespace": namespace,
            "name": name,
            "ready": ready,
            "status": status,
            "suspended": bool((obj.get("spec") or {}).get("suspend", False)),
            "applier": f"{applier.get('kind')} {applier.get('namespace')}/{applier.get('name')}"
            if applier.get("name")
            else None,
            "lastRequest": applier.get("lastRequest"),
        }
        row |= _redis_columns(stores, GitTargetUid(str(obj["metadata"]["uid"])), now)
        rows.append(row)
    return rows


def provider_rows(ctx: Context) -> list[Record]:
    """One record per GitProvider."""
    rows: list[Record] = []
    for obj in sorted(ctx.kube.list(GIT_PROVIDERS, ctx.list_namespace()).items, key=_meta):
        namespace, name = _meta(obj)
        ready, status = ready_of(obj)
        url = (obj.get("spec") or {}).get("url")
        rows.append(
            {"namespace": namespace, "name": name, "url": url, "ready": ready, "status": status}
        )
    return rows


def rule_rows(ctx: Context) -> list[Record]:
    """WatchRules of the namespace (or all), and the ClusterWatchRules whose GitTarget is
    there (all of them with ``-A``)."""
    where = ctx.list_namespace()
    rows: list[Record] = []
    for obj in sorted(ctx.kube.list(WATCH_RULES, where).items, key=_meta):
        namespace, name = _meta(obj)
        ready, status = ready_of(obj)
        target = ((obj.get("spec") or {}).get("targetRef") or {}).get("name")
        rows.append(
            {"kind": "WatchRule", "namespace": namespace, "name": name, "target": target}
            | {"ready": ready, "status": status}
        )
    for obj in sorted(ctx.kube.list(CLUSTER_WATCH_RULES).items, key=_meta):
        ref = (obj.get("spec") or {}).get("targetRef") or {}
        if where and ref.get("namespace") != where:
            continue
        ready, status = ready_of(obj)
        target = f"{ref.get('namespace')}/{ref.get('name')}"
        rows.append(
            {"kind": "ClusterWatchRule", "namespace": "", "name": _meta(obj)[1]}
            | {"target": target, "ready": ready, "status": status}
        )
    return rows


KINDS = {
    "targets": (target_rows, TARGET_COLUMNS),
    "providers": (provider_rows, PROVIDER_COLUMNS),
    "rules": (rule_rows, RULE_COLUMNS),
}


def run(ctx: Context, kind: str) -> int:
    """Print the rows of one kind."""
    rows_of, columns = KINDS[kind]
    rows = rows_of(ctx)
    emit({"items": rows}, ctx.output, columns)
    return 0
