"""The Argo CD double's comparison: ``status.sync``, ``reconciledAt``, the refresh annotation.

Driven with ``reconcile_due`` on an injected clock: time moves only when the test says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client.exceptions import ApiException

from sandbox.argocd import COMPARED, Settings
from sandbox.flux.conditions import timestamp
from tests.sandbox.integration.argocd_support import REFRESH, TARGET, ArgoEnv, open_env
from tests.sandbox.integration.flux_support import FakeClock, config_map

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path, clock: FakeClock) -> Iterator[ArgoEnv]:
    yield from open_env(tmp_path, clock=clock, settings=Settings(reconciliation_s=180))


def compared(env: ArgoEnv) -> list[str]:
    return [r.revision for r in env.argo.reconcile_due() if r.action == COMPARED]


def test_comparison_keeps_sync_status_and_never_applies(env: ArgoEnv, clock: FakeClock) -> None:
    """A new Application is compared: OutOfSync at the resolved commit, comparedTo, reconciledAt.

    Fact: ../shared/facts/appliers.md A4: ``status.sync {status, revision, comparedTo {source,
    destination}}`` with ``revision`` what ``targetRevision`` resolved to, ``reconciledAt`` set
    after the comparison, and a refresh never applies anything with automated sync off.
    """
    created = env.create_app()
    assert compared(env) == [env.head()]
    status = env.get()["status"]
    assert status["sync"] == {
        "status": "OutOfSync",
        "revision": env.head(),
        "comparedTo": {
            "source": created["spec"]["source"],
            "destination": created["spec"]["destination"],
        },
    }
    assert status["reconciledAt"] == timestamp(clock())
    assert "operationState" not in status
    with pytest.raises(ApiException) as missing:
        env.live()
    assert missing.value.status == 404


def test_refresh_annotation_compares_with_the_latest_and_is_removed(env: ArgoEnv) -> None:
    """A pushed commit is seen only on a refresh request, which is then removed.

    Fact: ../shared/facts/appliers.md A4: the annotation ``argocd.argoproj.io/refresh``
    requests a comparison that resolves the branch afresh; the controller removes it after
    persisting status.
    """
    env.create_app()
    first = compared(env)
    pushed = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    assert compared(env) == []
    env.refresh()
    assert compared(env) == [pushed] and first != [pushed]
    app = env.get()
    assert app["status"]["sync"]["revision"] == pushed
    assert REFRESH not in (app["metadata"].get("annotations") or {})


def test_comparison_expires_after_the_reconciliation_timeout(
    env: ArgoEnv, clock: FakeClock
) -> None:
    """The double compares again once ``timeout.reconciliation`` has passed, not before.

    Fact: ../shared/facts/appliers.md A4: comparisons expire after ``timeout.reconciliation``
    (configurable; 120 s plus jitter by default).
    """
    env.create_app()
    compared(env)
    pushed = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    clock.advance(179)
    assert compared(env) == []
    clock.advance(1)
    assert compared(env) == [pushed]
    assert env.get()["status"]["reconciledAt"] == timestamp(clock())


def test_synced_after_a_sync_and_out_of_sync_after_a_live_edit(env: ArgoEnv) -> None:
    """Synced when the live objects hold the folder at the resolved commit, else OutOfSync.

    Fact: ../shared/facts/appliers.md A4 (``status.sync.status`` Synced/OutOfSync from the
    comparison of the live state with the revision ``targetRevision`` resolves to).
    """
    env.create_app()
    env.argo.reconcile_due()
    env.set_operation({"sync": {}, "initiatedBy": {"username": "tester"}})
    env.argo.reconcile_due()
    assert env.get()["status"]["sync"]["status"] == "Synced"
    env.core.patch_namespaced_config_map("app", TARGET, {"data": {"color": "red"}})
    env.refresh()
    env.argo.reconcile_due()
    app = env.get()
    assert app["status"]["sync"]["status"] == "OutOfSync"
    assert env.live().data == {"color": "red"}
