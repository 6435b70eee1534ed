"""The Argo CD double in the background: watches, a held sync seen Running, refresh, kubectl.

Synchronised on the Application's watch (``wait_app``), never on sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.argocd import Settings
from sandbox.kube.server import KubeApiServer
from tests.sandbox.integration.argocd_support import (
    REFRESH,
    ArgoEnv,
    finished,
    open_env,
    phase,
)
from tests.sandbox.integration.flux_support import config_map
from tests.sandbox.integration.kube_http import Kubectl

pytestmark = pytest.mark.integration


@pytest.fixture
def env(tmp_path: Path) -> Iterator[ArgoEnv]:
    yield from open_env(tmp_path, settings=Settings(reconciliation_s=3600))


def test_a_held_sync_is_seen_running_then_succeeds(env: ArgoEnv) -> None:
    """While the sync runs, ``operationState`` is Running with startedAt and the op stays set.

    Fact: ../shared/facts/appliers.md A2 "How the controller consumes and clears it"
    (Running with startedAt, then Succeeded with finishedAt and ``operation: null``).
    """
    env.argo.start()
    env.create_app()
    env.wait_app(lambda a: bool((a.get("status") or {}).get("reconciledAt")))
    env.argo.pacing.gate.clear()
    env.set_operation({"sync": {}, "initiatedBy": {"username": "tester"}})
    running = env.wait_app(lambda a: phase(a) == "Running")
    state = running["status"]["operationState"]
    assert running["operation"] and state["startedAt"] and "finishedAt" not in state
    env.argo.pacing.gate.set()
    done = env.wait_app(finished)
    assert phase(done) == "Succeeded" and env.live().data == {"color": "blue"}


def test_refresh_annotation_is_served_and_removed_by_the_running_double(env: ArgoEnv) -> None:
    """In the background, a refresh request is compared at the new tip and removed.

    Fact: ../shared/facts/appliers.md A4 (refresh annotation; removed after persisting status).
    """
    env.argo.start()
    env.create_app()
    env.wait_app(lambda a: bool((a.get("status") or {}).get("reconciledAt")))
    pushed = env.work.push({"deploy/app.yaml": config_map("app", {"color": "green"})})
    env.refresh()
    app = env.wait_app(
        lambda a: (
            ((a.get("status") or {}).get("sync") or {}).get("revision") == pushed
            and REFRESH not in (a["metadata"].get("annotations") or {})
        )
    )
    assert app["status"]["sync"]["status"] == "OutOfSync"


def test_kubectl_reads_and_writes_application_status_with_plain_updates(
    kube: KubeApiServer, kubectl: Kubectl
) -> None:
    """kubectl works on Applications; with no status subresource a plain update writes status.

    Fact: ../shared/facts/appliers.md A1 (``subresources: {}``: a plain Update or Patch of the
    Application writes ``status`` too).
    """
    manifest = (
        "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n"
        "  namespace: default\nspec:\n  project: default\n  source:\n"
        "    repoURL: https://git.example/r.git\n  destination:\n"
        "    server: https://kubernetes.default.svc\n"
    )
    assert kubectl("apply", "-f", "-", stdin=manifest).returncode == 0
    got = kubectl("get", "applications", "-n", "default", "-o", "json")
    assert got.returncode == 0 and '"name": "web"' in got.stdout
    replaced = kubectl("get", "application", "web", "-n", "default", "-o", "yaml").stdout
    replaced += "status:\n  sync:\n    status: Synced\n"
    assert kubectl("replace", "-f", "-", stdin=replaced).returncode == 0
    status = kubectl(
        "get", "application", "web", "-n", "default", "-o", "jsonpath={.status.sync.status}"
    )
    assert status.stdout == "Synced"
