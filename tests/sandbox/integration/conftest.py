"""Fixtures for the sandbox integration tests: a Kubernetes API double per test, and kubectl.

Each test gets its own ``KubeApiServer`` on a free port (port 0) loaded with the real Flux and
Argo CD CRDs, stopped afterwards; ``kubectl`` runs the real binary against it through a
kubeconfig written by ``write_kubeconfig``, with a discovery cache private to the test.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.kube.server import KubeApiServer
from sandbox.paths import third_party_crd_files
from tests.sandbox.integration.kube_http import KUBECTL, Kubectl

# Small enough that bookmark tests finish fast, large enough not to flood other streams.
TEST_BOOKMARK_INTERVAL = 0.2


@pytest.fixture
def kube() -> Iterator[KubeApiServer]:
    """A started API server double with the Flux and Argo CD CRDs."""
    server = KubeApiServer(third_party_crd_files(), bookmark_interval=TEST_BOOKMARK_INTERVAL)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def kubectl(kube: KubeApiServer, tmp_path: Path) -> Kubectl:
    """Run kubectl against ``kube``; returns the completed process (text output)."""
    if not Path(KUBECTL).exists() and shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    config = tmp_path / "kubeconfig"
    kube.write_kubeconfig(config)
    binary = KUBECTL if Path(KUBECTL).exists() else "kubectl"

    def run(
        *args: str,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        command = [
            binary,
            "--kubeconfig",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            *args,
        ]
        return subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=60, env=env, check=False
        )

    return run
