"""What kustomize-controller's server-side apply compares and cleans up, as pure functions.

Facts: ../shared/facts/appliers.md F3 and fluxcd/pkg ``ssa`` (``manager_apply.go``,
``patch.go``, read with the ``search`` tool):

- drift: an object is applied only when the server-side dry-run of the apply differs from the
  live object: in labels, in annotations, or in anything outside ``metadata`` and ``status``
  ("Do not apply objects that have not drifted to avoid bumping the resource version",
  ``hasDrifted`` / ``hasObjectDrifted``); a missing object has drifted;
- ``cleanupMetadata`` before the apply: remove ``kubectl.kubernetes.io/last-applied-configuration``
  and the old Flux annotations and label, and hand the fields of managers whose names start
  with ``kubectl`` (Apply and Update), ``before-first-apply`` (Update) and
  ``kustomize-controller`` (Update) to the ``kustomize-controller`` Apply entry
  (``patchReplaceFieldsManagers``, matched with ``strings.HasPrefix`` on the main resource
  only), sent as one JSON patch. The real code renames those entries; here they are merged
  into one Apply entry (union of their ``fieldsV1``), so the result keeps one entry per
  manager identity. The next apply then drops the fields Git no longer sets;
- per-object opt-outs, in labels or annotations: ``kustomize.toolkit.fluxcd.io/reconcile:
  disabled`` and ``kustomize.toolkit.fluxcd.io/ssa: Ignore`` skip the object,
  ``ssa: IfNotPresent`` applies it only when missing, ``ssa: Merge`` skips the cleanup.
"""

from __future__ import annotations

from typing import Any

FIELD_MANAGER = "kustomize-controller"
#: (manager name prefix, operation) whose fields the cleanup hands to FIELD_MANAGER.
TAKEN_OVER = (
    ("kubectl", "Apply"),
    ("kubectl", "Update"),
    ("before-first-apply", "Update"),
    (FIELD_MANAGER, "Update"),
)
REMOVED_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "kustomize.toolkit.fluxcd.io/checksum",
    "fluxcd.io/sync-checksum",
)
REMOVED_LABELS = ("fluxcd.io/sync-gc-mark",)
GROUP = "kustomize.toolkit.fluxcd.io"
RECONCILE_KEY, SSA_KEY, PRUNE_KEY = f"{GROUP}/reconcile", f"{GROUP}/ssa", f"{GROUP}/prune"


def has_drifted(live: dict[str, Any] | None, dry_run: dict[str, Any]) -> bool:
    """Whether applying would change ``live`` (the dry-run result is what it would become)."""
    if live is None:
        return True
    live_meta, dry_meta = live.get("metadata", {}), dry_run.get("metadata", {})
    for field in ("labels", "annotations"):
        if (live_meta.get(field) or {}) != (dry_meta.get(field) or {}):
            return True
    return _body(live) != _body(dry_run)


def _body(obj: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}


def marked(obj: dict[str, Any] | None, key: str, value: str) -> bool:
    """Whether a label or annotation ``key`` of ``obj`` equals ``value`` (any case)."""
    if obj is None:
        return False
    meta = obj.get("metadata", {})
    found = [(meta.get(field) or {}).get(key) for field in ("labels", "annotations")]
    return any(isinstance(v, str) and v.lower() == value.lower() for v in found)


def skipped(obj: dict[str, Any], live: dict[str, Any] | None) -> bool:
    """Opt-outs: reconcile disabled or ssa Ignore (on either side), IfNotPresent when present."""
    for side in (obj, live):
        if marked(side, RECONCILE_KEY, "disabled") or marked(side, SSA_KEY, "Ignore"):
            return True
    return live is not None and marked(obj, SSA_KEY, "IfNotPresent")


def cleanup_patch(live: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON patch ``cleanupMetadata`` sends for ``live`` (empty: nothing to clean)."""
    if marked(live, SSA_KEY, "Merge"):
        return []
    meta = live.get("metadata", {})
    ops: list[dict[str, Any]] = [
        {"op": "remove", "path": f"/metadata/{field}/{_escape(key)}"}
        for field, keys in (("annotations", REMOVED_ANNOTATIONS), ("labels", REMOVED_LABELS))
        for key in keys
        if key in (meta.get(field) or {})
    ]
    entries = merged_managed_fields(meta.get("managedFields") or [])
    if entries is not None:
        ops.append({"op": "replace", "path": "/metadata/managedFields", "value": entries})
    return ops


def merged_managed_fields(entries: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """``entries`` with the taken-over managers merged into FIELD_MANAGER's Apply entry."""
    taken = [entry for entry in entries if _taken_over(entry)]
    if not taken:
        return None
    kept = [entry for entry in entries if not _taken_over(entry)]
    own = next(
        (
            e
            for e in kept
            if e.get("manager") == FIELD_MANAGER
            and e.get("operation") == "Apply"
            and not e.get("subresource")
        ),
        None,
    )
    fields: dict[str, Any] = {}
    for entry in ([own] if own else []) + taken:
        fields = union(fields, entry.get("fieldsV1") or {})
    merged = {
        **(own or taken[0]),
        "manager": FIELD_MANAGER,
        "operation": "Apply",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if own is None:
        return [*kept, merged]
    return [merged if entry is own else entry for entry in kept]


def union(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    """The union of two ``FieldsV1`` trees."""
    merged = dict(left)
    for key, value in right.items():
        merged[key] = union(merged.get(key) or {}, value or {}) if key in merged else value
    return merged


def _taken_over(entry: dict[str, Any]) -> bool:
    if entry.get("subresource"):
        return False
    manager, operation = str(entry.get("manager", "")), entry.get("operation")
    return any(manager.startswith(prefix) and operation == op for prefix, op in TAKEN_OVER)


def _escape(key: str) -> str:
    """A JSON pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")
