"""Fixtures for tests that reach a repository over ``ssh://`` through the sandbox's fake ssh."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from sandbox.githost.ssh_host import FakeSshHost
from sandbox.kube.server import KubeApiServer

#: When the initial commit was made: a fixed instant, so nothing here reads the clock.
CREATED_AT = 1_767_225_600.0
REPO = "sandbox/apps"
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\ntest identity\n-----END OPENSSH PRIVATE KEY-----\n"
OTHER_KEY = KEY.replace(b"test", b"another")


@dataclass(frozen=True, slots=True)
class SshRemote:
    """A repository behind the fake ssh, the key it accepts and the Secret that holds it."""

    host: FakeSshHost
    url: str
    bare: Path

    @property
    def secret(self) -> dict[str, bytes]:
        """A GitProvider Secret with the accepted identity and the host's known_hosts."""
        return {"identity": KEY, "known_hosts": self.host.known_hosts}

    def tip(self) -> str:
        """What ``main`` points at, read from the bare repository itself."""
        return git_out("-C", str(self.bare), "rev-parse", "refs/heads/main")


def git_out(*args: str, env: Mapping[str, str] | None = None) -> str:
    """Run git (with ``env`` added to this process's environment) and return its stdout."""
    done = subprocess.run(
        ["git", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
        env={**os.environ, **env} if env else None,
    )
    return done.stdout.strip()


def serve_over_ssh(folder: Path, monkeypatch: pytest.MonkeyPatch) -> SshRemote:
    """A repository served over the fake ssh, whose ``ssh`` is first on this test's PATH."""
    host = FakeSshHost(folder)
    host.allow(KEY)
    url = host.create_repo(REPO, {"apps/cm.yaml": b"a: 1\n"}, CREATED_AT)
    monkeypatch.setenv("PATH", host.path_with_shim())
    return SshRemote(host, url, host.repo_path(REPO))


@contextmanager
def ssh_remote_and_cluster(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SshRemote, KubeApiServer]]:
    """A repository behind the fake ssh and an API server to hold its GitProvider's Secret."""
    remote = serve_over_ssh(folder, monkeypatch)
    kube = KubeApiServer()
    kube.start()
    try:
        yield remote, kube
    finally:
        kube.stop()


def store_secret(
    core: client.CoreV1Api, namespace: str, name: str, data: Mapping[str, bytes]
) -> None:
    """Create the Secret ``namespace/name`` holding ``data``."""
    core.create_namespaced_secret(
        namespace,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name=name),
            string_data={key: value.decode() for key, value in data.items()},
        ),
    )
