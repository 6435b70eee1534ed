"""Pure rules of the Argo CD double: retry timing, sync windows, history, client-side patch."""

from __future__ import annotations

from typing import Any

from sandbox.argocd import operation as ops
from sandbox.argocd.cluster import three_way_patch
from sandbox.argocd.diff import synced
from sandbox.argocd.policy import SyncWindow, can_sync, with_history


def state(retry: dict[str, Any], count: int = 0) -> dict[str, Any]:
    return {
        "operation": {"sync": {"revision": "abc"}, "retry": retry},
        "phase": "Running",
        "startedAt": ops.stamp(0),
        "finishedAt": ops.stamp(1000),
        "retryCount": count,
    }


def test_backoff_defaults_and_cap() -> None:
    """Fact: ../shared/facts/appliers.md A1 (defaults 5s, factor 2, maxDuration 3m; a bare
    integer is seconds) and A3 (wait = duration x factor^retryCount, capped)."""
    assert ops.next_retry_at(state({"limit": 5}, 1)) == 1010
    assert ops.next_retry_at(state({"limit": 5}, 10)) == 1180
    assert ops.next_retry_at(state({"backoff": {"duration": "3", "factor": 3}}, 2)) == 1027


def test_retries_left_and_unlimited() -> None:
    """Fact: ../shared/facts/appliers.md A1/A3 (limit 0: no retries; negative: unlimited)."""
    assert not ops.retries_left(state({"limit": 0}))
    assert ops.retries_left(state({"limit": 2}, 1)) and not ops.retries_left(state({"limit": 2}, 2))
    assert ops.retries_left(state({"limit": -1}, 99))


def test_retry_message_uses_the_kitchen_clock() -> None:
    """Fact: ../shared/facts/appliers.md A3 ("<error>. Retrying attempt #<n+1> at 3:04PM.")."""
    waiting = ops.await_retry(state({"limit": 3}), "boom", 13 * 3600 + 4 * 60)
    assert waiting["message"] == "boom. Retrying attempt #1 at 1:04PM."


def test_sync_windows_hold_automated_operations() -> None:
    """Fact: ../shared/facts/appliers.md A6 (CanSync: active deny blocks unless manual with
    manualSync; allow windows none active block; no windows allow)."""
    deny = SyncWindow("deny", manual_sync=True)
    assert can_sync([], manual=False)
    assert not can_sync([deny], manual=False) and can_sync([deny], manual=True)
    closed = SyncWindow("allow", active=False)
    assert not can_sync([closed], manual=True) and can_sync([SyncWindow("allow")], manual=False)


def test_history_only_for_full_successful_syncs() -> None:
    """Fact: the CRD's revisionHistoryLimit (default 10); ../shared/facts/appliers.md A2
    (a selfHeal sync restricted to some resources)."""
    app: dict[str, Any] = {"spec": {"source": {}}, "status": {}}
    done = {**state({}), "phase": "Succeeded", "syncResult": {"revision": "abc"}}
    assert [h["revision"] for h in with_history(app, done)] == ["abc"]
    partial = {**done, "operation": {"sync": {"resources": [{"kind": "ConfigMap"}]}}}
    assert with_history(app, partial) == []
    app["status"]["history"] = [{"id": i, "revision": str(i)} for i in range(10)]
    assert [h["id"] for h in with_history(app, done)] == list(range(1, 11))


def test_client_side_patch_drops_fields_git_no_longer_sets() -> None:
    """Fact: ../shared/facts/appliers.md A5 (client-side apply is kubectl's apply)."""
    last = {"metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}}
    desired = {"metadata": {"name": "a"}, "data": {"x": "3"}}
    patch = three_way_patch(last, desired)
    assert patch["data"] == {"x": "3", "y": None}
    assert "kubectl.kubernetes.io/last-applied-configuration" in patch["metadata"]["annotations"]
    assert synced(desired, {"metadata": {"name": "a", "uid": "u"}, "data": {"x": "3"}})
    assert not synced(desired, {"metadata": {"name": "a"}, "data": {"x": "1"}})
