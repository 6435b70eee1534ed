"""Fixtures of the watcher's integration tests: a sandbox cluster per test, a Git host."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sandbox.githost import GitHost
from tests.integration.watcher.harness import Cluster, Rig, sandbox_cluster


@pytest.fixture(scope="module")
def githost(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitHost]:
    """A Git host with one repository, ``team/config``, that GitProviders may point at."""
    host = GitHost(tmp_path_factory.mktemp("git"))
    host.start()
    host.create_repo("team/config", files={"README.md": b"hello\n"})
    yield host
    host.stop()


@pytest.fixture
def repo_url(githost: GitHost) -> str:
    return githost.repo_url("team/config")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with sandbox_cluster(tmp_path) as running:
        yield running


@pytest.fixture
def rig(cluster: Cluster, redis_client: redis.Redis, key_prefix: str) -> Rig:
    return Rig(cluster, redis_client, key_prefix)
