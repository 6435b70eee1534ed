"""``sandbox.stack.start`` (behind ``python -m sandbox up``) runs one Argo CD double per cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client, config, watch

from sandbox.stack import start
from tests.sandbox.integration.argocd_support import APPS, WAIT_S

pytestmark = pytest.mark.integration


def test_the_sandbox_runs_an_argocd_double_unless_told_not_to(tmp_path: Path) -> None:
    """An Application in the sandbox is compared by its double; ``argocd=False`` leaves it out.

    Fact: ../shared/facts/appliers.md A4 (the controller keeps ``status.sync`` and
    ``reconciledAt`` of every Application).
    """
    running = start(tmp_path / "sbx", flux=False)
    try:
        assert running.argocd is not None
        api = config.new_client_from_config(str(tmp_path / "sbx" / "kubeconfig"), "sandbox")
        custom = client.CustomObjectsApi(api)
        spec = {
            "project": "default",
            "source": {"repoURL": running.githost.repo_url("demo"), "path": "."},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": "default"},
        }
        body = {"apiVersion": "/".join(APPS[:2]), "kind": "Application"}
        body |= {"metadata": {"name": "demo"}, "spec": spec}
        created = custom.create_namespaced_custom_object(*APPS[:2], "default", APPS[2], body)
        seen = None
        for event in watch.Watch().stream(  # type: ignore[no-untyped-call]
            custom.list_namespaced_custom_object,
            *APPS[:2],
            "default",
            APPS[2],
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=int(WAIT_S),
        ):
            if (event["raw_object"].get("status") or {}).get("reconciledAt"):
                seen = event["raw_object"]
                break
        assert seen is not None, "the Argo CD double never compared the Application"
        assert seen["status"]["sync"]["status"] == "Synced"  # README.md only: nothing to apply
    finally:
        running.stop()
    without = start(tmp_path / "bare", flux=False, argocd=False)
    try:
        assert without.argocd is None
    finally:
        without.stop()
