"""``python -m sandbox up`` as a new user runs it: files written, reachable, clean stop."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kubernetes import client, config

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
