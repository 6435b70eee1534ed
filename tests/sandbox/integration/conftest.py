"""Fixtures for the sandbox integration tests: a Kubernetes API double per test, and kubectl;
a Git host, a git client and a webhook receiver; the API double with our own CRDs, once per
module; a settable clock for the Flux and Argo CD doubles.

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
from kubernetes import client

from sandbox.githost import GitHost
from sandbox.kube.server import KubeApiServer
from sandbox.paths import own_crd_files, third_party_crd_files
from tests.sandbox.integration.flux_support import FakeClock
from tests.sandbox.integration.kube_http import KUBECTL, Kubectl
from tests.sandbox.integration.test_githost_support import (
    Git,
    Receiver,
    running_host,
    running_receiver,
)

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


@pytest.fixture(scope="module")
def api() -> Iterator[client.CustomObjectsApi]:
    """The API double with our own CRDs (no third-party ones), shared by a module's tests."""
    server = KubeApiServer(own_crd_files())
    server.start()
    yield client.CustomObjectsApi(server.api_client())
    server.stop()


@pytest.fixture
def git(tmp_path: Path) -> Git:
    """git as a person on this machine, with a home folder of the test's own."""
    return Git(tmp_path / "home")


@pytest.fixture
def host(tmp_path: Path) -> Iterator[GitHost]:
    """A started Git host, stopped after the test."""
    yield from running_host(tmp_path / "host")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A started webhook receiver that records what the Git host posts."""
    yield from running_receiver()


@pytest.fixture
def clock() -> FakeClock:
    """The doubles' clock, moved by the test."""
    return FakeClock()
