"""The Argo CD double's automated sync: the operation it builds, its guards, selfHeal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.argocd import AUTO_SYNC, Settings
from tests.sandbox.integration.argocd_support import TARGET, ArgoEnv, open_env
from tests.sandbox.integration.flux_support import FakeClock, config_map

pytestmark = pytest.mark.integration

BROKEN = "apiVersion: example.com/v1\nkind: Nope\nmetadata:\n  name: x\n  namespace: default\n"


@pytest.fixture
def env(tmp_path: Path, clock: FakeClock) -> Iterator[ArgoEnv]:
    yield from open_env(tmp_path, clock=clock, settings=Settings(reconciliation_s=3600))


def autosyncs(env: ArgoEnv) -> list[str]:
    return [r.revision for r in env.argo.reconcile_due() if r.action == AUTO_SYNC]


def test_autosync_builds_the_operation_as_a2_says_and_applies_new_commits(env: ArgoEnv) -> None:
    """Automated sync applies a commit nobody asked for, with the operation autoSync builds.

    Fact: ../shared/facts/appliers.md A2 "How autoSync builds its operation" (source copied,
    revision the compared commit, prune from automated.prune, syncOptions, initiatedBy
    automated, retry ``{limit: 5}`` without syncPolicy.retry; no username, info or dryRun).
    """
    policy = {"automated": {"prune": True}, "syncOptions": ["CreateNamespace=true"]}
    created = env.create_app(sync_policy=policy)
    first = env.head()
    assert autosyncs(env) == [first]
    state = env.get()["status"]["operationState"]
    assert state["operation"] == {
        "sync": {
            "source": created["spec"]["source"],
            "revision": first,
            "prune": True,
            "syncOptions": ["CreateNamespace=true"],
        },
        "initiatedBy": {"automated": True},
        "retry": {"limit": 5},
    }
    pushed = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.refresh()
    assert autosyncs(env) == [pushed]
    assert env.live().data == {"color": "green"}


def test_enabled_false_keeps_automated_sync_off(env: ArgoEnv) -> None:
    """``automated: {enabled: false}`` disables automated sync while keeping its settings.

    Fact: ../shared/facts/appliers.md A1 (``IsAutomatedSyncEnabled`` = automated present and
    enabled absent or true).
    """
    env.create_app(sync_policy={"automated": {"enabled": False, "prune": True}})
    assert autosyncs(env) == []
    app = env.get()
    assert app["status"]["sync"]["status"] == "OutOfSync" and "operation" not in app


def test_a_failed_revision_is_not_attempted_again(env: ArgoEnv) -> None:
    """After a failed automated sync of a revision, autoSync does not retry it; SyncError.

    Fact: ../shared/facts/appliers.md A2 guards (``alreadyAttemptedSync``; after a failed
    attempt the condition SyncError "Failed last sync attempt to ..." and no retry).
    """
    bad = env.work.push({"deploy/broken.yaml": BROKEN})
    env.create_app(sync_policy={"automated": {}, "retry": {"limit": 0}})
    assert autosyncs(env) == [bad]
    assert env.get()["status"]["operationState"]["phase"] == "Failed"
    env.refresh()
    assert autosyncs(env) == []
    conditions = env.get()["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["SyncError"]
    assert conditions[0]["message"].startswith(f"Failed last sync attempt to {bad}")


def test_self_heal_resyncs_drift_only_when_on(env: ArgoEnv, clock: FakeClock) -> None:
    """A live edit is reverted at the next comparison only with selfHeal, after its backoff.

    Fact: ../shared/facts/appliers.md A2 (same revision already synced: skipped without
    selfHeal; with it, ``autoHealAttemptsCount + 1`` and ``sync.resources`` the non-Synced
    resources, after the self-heal backoff, default 5 s).
    """
    env.create_app(sync_policy={"automated": {}})
    autosyncs(env)
    env.core.patch_namespaced_config_map("app", TARGET, {"data": {"color": "red"}})
    env.refresh()
    assert autosyncs(env) == []
    assert env.live().data == {"color": "red"}
    env.patch({"spec": {"syncPolicy": {"automated": {"selfHeal": True}}}})
    assert autosyncs(env) == []  # within the 5 s self-heal backoff
    clock.advance(5)
    assert autosyncs(env) == [env.head()]
    sync = env.get()["status"]["operationState"]["operation"]["sync"]
    assert sync["autoHealAttemptsCount"] == 1
    assert sync["resources"] == [
        {"group": "", "kind": "ConfigMap", "namespace": "default", "name": "app"}
    ]
    assert env.live().data == {"color": "blue"}
