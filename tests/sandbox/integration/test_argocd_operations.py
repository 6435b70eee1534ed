"""The Argo CD double consumes ``operation``: state, apply, tracking, prune, history, retries.

Driven with ``reconcile_due`` on an injected clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.argocd import BLOCKED, FINISHED, RETRY_WAIT, Settings, SyncWindow
from sandbox.flux.conditions import timestamp
from tests.sandbox.integration.argocd_support import TARGET, ArgoEnv, open_env
from tests.sandbox.integration.flux_support import FakeClock, config_map

pytestmark = pytest.mark.integration

BROKEN = "apiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n  namespace: default\n"
OURS = {"username": "gitops-reverser", "automated": True}


@pytest.fixture
def env(tmp_path: Path, clock: FakeClock) -> Iterator[ArgoEnv]:
    yield from open_env(tmp_path, clock=clock, settings=Settings(reconciliation_s=3600))


def sync_op(revision: str = "", **extra: Any) -> dict[str, Any]:
    return {"sync": {"revision": revision, **extra.pop("sync", {})}, "initiatedBy": OURS, **extra}


def managers(env: ArgoEnv, name: str = "app") -> list[tuple[str, str]]:
    return [(m.manager, m.operation) for m in env.live(name).metadata.managed_fields]


def test_pinned_sync_applies_that_commit_and_clears_the_operation(
    env: ArgoEnv, clock: FakeClock
) -> None:
    """A pinned operation syncs its commit, not the tip; then Succeeded and ``operation: null``.

    Fact: ../shared/facts/appliers.md A2 "How the controller consumes and clears it"
    (Running with startedAt, the op's revision, ``syncResult.revision`` the concrete commit,
    finishedAt, ``operation: null``), A3 (Succeeded), A4 (after the pinned sync to X while the
    branch is at Y, ``status.sync.revision`` is Y and OutOfSync) and ``status.history``.
    """
    pinned = env.head()
    env.create_app()
    env.argo.reconcile_due()
    tip = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.refresh()
    env.set_operation(sync_op(pinned))
    records = env.argo.reconcile_due()
    assert [r.message for r in records if r.action == FINISHED] == ["Succeeded"]
    app = env.get()
    state = app["status"]["operationState"]
    assert "operation" not in app
    assert (state["phase"], state["syncResult"]["revision"]) == ("Succeeded", pinned)
    assert state["operation"]["sync"]["revision"] == pinned
    assert state["startedAt"] == state["finishedAt"] == timestamp(clock())
    assert env.live().data == {"color": "blue"}
    assert app["status"]["sync"]["revision"] == tip
    assert app["status"]["sync"]["status"] == "OutOfSync"
    assert [h["revision"] for h in app["status"]["history"]] == [pinned]
    assert app["status"]["history"][0]["initiatedBy"] == OURS


def test_unpinned_sync_applies_the_resolved_target_revision(env: ArgoEnv) -> None:
    """With no revision in the operation, the sync resolves ``targetRevision`` (the tip).

    Fact: ../shared/facts/appliers.md A2 (``sync.revision`` "If omitted, will use the revision
    specified in app spec"; an empty revision falls back to ``source.targetRevision``).
    """
    env.create_app()
    env.argo.reconcile_due()
    tip = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.set_operation(sync_op())
    env.argo.reconcile_due()
    state = env.get()["status"]["operationState"]
    assert state["syncResult"]["revision"] == tip and env.live().data == {"color": "green"}


def test_client_side_apply_is_an_update_by_argocd_controller_with_tracking(
    env: ArgoEnv,
) -> None:
    """Objects carry the tracking annotation and ``argocd-controller`` Update entries.

    Fact: ../shared/facts/appliers.md A5 (the manager ``argocd-controller`` for client-side
    apply too, ``operation: Update``; tracking annotation ``argocd.argoproj.io/tracking-id``)
    and ../shared/facts/upstream-gitops-reverser.md "Argo tracking" (the value
    ``<app>:<group>/<Kind>:<ns>/<name>``).
    """
    env.create_app()
    env.set_operation(sync_op())
    env.argo.reconcile_due()
    annotations = env.live().metadata.annotations
    assert annotations["argocd.argoproj.io/tracking-id"] == "web:/ConfigMap:default/app"
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations
    assert managers(env) == [("argocd-controller", "Update")]
    env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.set_operation(sync_op())
    env.argo.reconcile_due()
    assert env.live().data == {"color": "green"}
    assert managers(env) == [("argocd-controller", "Update")]


def test_server_side_apply_option_applies_as_argocd_controller(env: ArgoEnv) -> None:
    """``ServerSideApply=true``: a server-side apply, entry ``argocd-controller``/``Apply``.

    Fact: ../shared/facts/appliers.md A5 (SSA with ForceConflicts under ``argocd-controller``).
    """
    env.create_app()
    env.core.create_namespaced_config_map(
        TARGET,
        {"metadata": {"name": "app"}, "data": {"color": "red"}},
        field_manager="someone-else",
    )
    env.set_operation(sync_op(sync={"syncOptions": ["ServerSideApply=true"]}))
    env.argo.reconcile_due()
    assert env.get()["status"]["operationState"]["phase"] == "Succeeded"
    assert env.live().data == {"color": "blue"}
    assert ("argocd-controller", "Apply") in managers(env)


def test_prune_only_when_the_operation_says_prune(env: ArgoEnv) -> None:
    """A tracked object gone from the folder is deleted only by an operation with ``prune``.

    Fact: ../shared/facts/appliers.md A2 (``sync.prune``; autoSync copies
    ``automated.prune``) and A5 (what the Application owns is found by its tracking annotation).
    """
    env.create_app()
    two = {"deploy/other.yaml": config_map("other", {"size": "s"})}
    env.work.push(two)
    env.set_operation(sync_op())
    env.argo.reconcile_due()
    env.work.push({}, removed=("deploy/other.yaml",))
    env.set_operation(sync_op())
    env.argo.reconcile_due()
    assert env.live("other").data == {"size": "s"}
    assert env.get()["status"]["sync"]["status"] == "OutOfSync"
    env.set_operation(sync_op(sync={"prune": True}))
    env.argo.reconcile_due()
    with pytest.raises(ApiException) as gone:
        env.live("other")
    assert gone.value.status == 404
    assert env.get()["status"]["sync"]["status"] == "Synced"


def test_history_is_bounded_by_the_revision_history_limit(env: ArgoEnv) -> None:
    """Each full successful sync appends to ``status.history``; the oldest drop out.

    Fact: the Application CRD's ``spec.revisionHistoryLimit`` ("limits the number of items
    kept in the application's revision history", default 10) and ``RevisionHistory`` (id,
    revision, deployedAt, deployStartedAt); ../shared/facts/appliers.md A4 (the synced commit
    is in ``status.history[-1].revision``).
    """
    env.create_app()
    env.patch({"spec": {"revisionHistoryLimit": 2}})
    commits = []
    for color in ("a", "b", "c"):
        commits.append(env.work.push({"deploy/app.yaml": config_map("app", {"color": color})}))
        env.set_operation(sync_op())
        env.argo.reconcile_due()
    history = env.get()["status"]["history"]
    assert [(h["id"], h["revision"]) for h in history] == [(1, commits[1]), (2, commits[2])]


def test_failed_sync_with_retries_left_stays_running_then_fails(
    env: ArgoEnv, clock: FakeClock
) -> None:
    """A failed attempt with retries left is Running with finishedAt and retryCount, op kept.

    Fact: ../shared/facts/appliers.md A3 "A failed operation awaiting retry" (phase Running,
    finishedAt, retryCount n+1, message "... Retrying attempt #n at 3:04PM.", ``operation``
    stays set; the wait is ``duration x factor^retryCount``; after the last attempt Failed,
    "(retried N times).", ``operation: null``).
    """
    env.work.push({"deploy/broken.yaml": BROKEN})
    env.create_app()
    retry = {"limit": 1, "backoff": {"duration": "10s", "factor": 2}}
    env.set_operation(sync_op(retry=retry))
    records = env.argo.reconcile_due()
    assert [r.action for r in records if r.action in (RETRY_WAIT, FINISHED)] == [RETRY_WAIT]
    app = env.get()
    state = app["status"]["operationState"]
    assert app["operation"]["retry"] == retry
    assert (state["phase"], state["retryCount"]) == ("Running", 1)
    assert state["finishedAt"] == timestamp(clock())
    assert "Retrying attempt #1 at " in state["message"] and 'kind "Nope"' in state["message"]
    clock.advance(19)  # duration 10s x factor 2 ^ retryCount 1 = 20 s
    assert [r.action for r in env.argo.reconcile_due() if r.action == FINISHED] == []
    clock.advance(1)
    env.argo.reconcile_due()
    app = env.get()
    state = app["status"]["operationState"]
    assert "operation" not in app
    assert state["phase"] == "Failed" and state["message"].endswith("(retried 1 times).")


def test_retry_refresh_drops_the_pinned_revision(env: ArgoEnv, clock: FakeClock) -> None:
    """With ``retry.refresh: true`` a retry syncs the branch's latest commit, not the pin.

    Fact: ../shared/facts/appliers.md A3 "``retry.refresh: true`` and the pinned revision"
    (the copy in ``operationState.operation`` loses ``sync.revision``; the ``operation``
    field keeps it; the message says "with latest revisions").
    """
    bad = env.work.push({"deploy/broken.yaml": BROKEN})
    env.create_app()
    retry = {"limit": 2, "backoff": {"duration": "10s"}, "refresh": True}
    env.set_operation(sync_op(bad, retry=retry))
    env.argo.reconcile_due()
    fixed = env.work.push({}, removed=("deploy/broken.yaml",))
    clock.advance(20)
    env.argo.reconcile_due()
    state = env.get()["status"]["operationState"]
    assert state["phase"] == "Succeeded"
    assert state["operation"]["sync"]["revision"] == ""
    assert state["syncResult"]["revision"] == fixed


def test_sync_window_holds_the_operation_running(env: ArgoEnv, clock: FakeClock) -> None:
    """An active deny window holds even an automated-initiated operation Running.

    Fact: ../shared/facts/appliers.md A6 (windows apply to every operation;
    ``initiatedBy.automated: true`` gets no manualSync override; the op stays Running with
    "Sync operation blocked by sync window" and starts when the window opens) and A3.
    """
    env.create_app()
    env.argo.set_windows([SyncWindow("deny", manual_sync=True)])
    env.set_operation(sync_op())
    records = env.argo.reconcile_due()
    assert [r.action for r in records if r.action in (BLOCKED, FINISHED)] == [BLOCKED]
    app = env.get()
    state = app["status"]["operationState"]
    assert state["phase"] == "Running"
    assert state["message"] == "Sync operation blocked by sync window"
    assert app["operation"] and "finishedAt" not in state
    env.argo.set_windows([])
    env.argo.reconcile_due()
    assert env.get()["status"]["operationState"]["phase"] == "Succeeded"
