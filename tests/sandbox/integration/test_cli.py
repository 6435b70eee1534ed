"""``python -m sandbox up`` as a new user runs it: files written, reachable, clean stop."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from sandbox.webhook_sink import WebhookSink
from tests.helpers import wait_until

pytestmark = pytest.mark.integration


def test_up_serves_a_cluster_and_a_git_host_and_stops_on_sigterm(tmp_path: Path) -> None:
    directory = tmp_path / "sbx"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "up", "--dir", str(directory)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: (directory / "sandbox.json").exists() or proc.poll() is not None,
            30,
            "sandbox.json",
        )
        info = json.loads((directory / "sandbox.json").read_text())
        api = client.CoreV1Api(
            config.new_client_from_config(str(directory / "kubeconfig"), context="sandbox")
        )
        names = {ns.metadata.name for ns in api.list_namespace().items}
        assert {"default", "kube-system", "kube-public"} <= names
        clone = tmp_path / "clone"
        subprocess.run(
            ["git", "clone", "-q", info["repositories"]["demo"], str(clone)], check=True, timeout=30
        )
        assert (clone / "README.md").exists()
        if shutil.which("kubectl"):
            out = subprocess.run(
                [
                    "kubectl",
                    "--kubeconfig",
                    str(directory / "kubeconfig"),
                    "get",
                    "crd",
                    "-o",
                    "name",
                ],
                capture_output=True,
                text=True,
                check=True,
                timeout=30,
            ).stdout
            assert "gittargets.gitopsreverser.io" in out
            assert "kustomizations.kustomize.toolkit.fluxcd.io" in out
    finally:
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "sandbox stopped" in output
    assert "Traceback" not in output  # the Flux doubles expect their watches to close on stop


def test_up_with_users_an_audit_webhook_and_pacing(tmp_path: Path) -> None:
    """Attribution can be tried locally: ``--user`` tokens name who edits, and the API's
    audit events go to ``--audit-webhook`` with ``--audit-token`` (docs/attribution.md)."""
    sink = WebhookSink(b"unused").start()
    directory = tmp_path / "sbx"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandbox",
            "up",
            "--dir",
            str(directory),
            "--no-argocd",
            "--user",
            "alice=tok-alice",
            "--user",
            "bob=tok-bob",
            "--audit-webhook",
            f"{sink.url}/audit-webhook/local",
            "--audit-token",
            "audit-secret",
            "--flux-before-apply",
            "0.5",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_until(
            lambda: (directory / "sandbox.json").exists() or proc.poll() is not None,
            30,
            "sandbox.json",
        )
        as_alice = client.CoreV1Api(
            config.new_client_from_config(str(directory / "kubeconfig-alice"), context="sandbox")
        )
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="by-alice"))
        as_alice.create_namespaced_config_map("default", body)
        admin = client.CoreV1Api(
            config.new_client_from_config(str(directory / "kubeconfig"), context="sandbox")
        )
        assert admin.read_namespaced_config_map("by-alice", "default").metadata.name == "by-alice"

        def audited() -> list[dict[str, Any]]:
            return [
                event
                for delivery in sink.deliveries()
                for event in delivery.json().get("items", [])
                if event.get("objectRef", {}).get("name") == "by-alice"
                and event.get("verb") == "create"
            ]

        wait_until(lambda: bool(audited()), 30, "the audit event of alice's create")
        assert {e["user"]["username"] for e in audited()} == {"alice"}
        assert all(d.path == "/audit-webhook/local" for d in sink.deliveries())
        bearer = {d.headers.get("Authorization") for d in sink.deliveries()}
        assert bearer == {"Bearer audit-secret"}
        stranger = tmp_path / "stranger"
        text = (directory / "kubeconfig-bob").read_text().replace("tok-bob", "tok-nobody")
        stranger.write_text(text)
        with pytest.raises(client.exceptions.ApiException) as refused:
            client.CoreV1Api(
                config.new_client_from_config(str(stranger), context="sandbox")
            ).list_namespace()
        assert refused.value.status == 401
    finally:
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
        sink.stop()
    assert proc.returncode == 0, output
    assert "User alice:" in output and "User bob:" in output
    assert "Pacing:         Flux 0.5s before an apply, 0s between objects" in output
    assert f"Audit events: POSTed to {sink.url}/audit-webhook/local" in output
