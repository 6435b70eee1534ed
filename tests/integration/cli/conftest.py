"""Fixtures of the CLI's integration tests: the API double (with the GitTarget CRD as it will
be, ``spec.suspend`` and ``status.lastHandledReconcileAt`` in it), a namespace ``team``, and
the CLI pointed at both and at the test's Redis."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from sandbox.kube.server import KubeApiServer
from shared.settings import Settings
from tests.integration.cli.harness import Api, Cli, sandbox_api

NS = "team"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[KubeApiServer]:
    with sandbox_api(tmp_path, suspend=True, handled=True) as running:
        yield running


@pytest.fixture
def api(server: KubeApiServer) -> Api:
    made = Api(server.api_client())
    made.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return made


@pytest.fixture
def cli(server: KubeApiServer, tmp_path: Path, redis_client: redis.Redis, key_prefix: str) -> Cli:
    url = Settings.from_env().redis_url
    return Cli(tmp_path / "kubeconfig", ("--redis-url", url, "--key-prefix", key_prefix))
