"""Fixtures every tier may use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, settings

from sandbox import paths
from shared.settings import Settings
from shared.store.connection import connect

#: A shared, busy machine slows every example down; a property test fails on a wrong answer,
#: never on the clock (a hung one is stopped by the per-test timeout instead). Under
#: pytest-xdist (make test-fast) the workers keep no example database: several processes
#: replaying and saving into one folder at once made hypothesis fail inside its own engine
#: (``assert i < len(self.spans)``) on tests that pass alone; a failing example is printed.
settings.register_profile(
    "gitops-reverser",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    **({"database": None} if os.environ.get("PYTEST_XDIST_WORKER") else {}),
)
settings.load_profile("gitops-reverser")

#: Tiers that start the sandbox's API server, which serves the real Flux and Argo CD CRDs.
_TIERS_WITH_THE_SANDBOX = ("integration", "e2e", "soak", "image")


def _needs_third_party_crds(item: pytest.Item) -> bool:
    return "crds" in getattr(item, "fixturenames", ()) or any(
        tier in item.path.parts for tier in _TIERS_WITH_THE_SANDBOX
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stop with one message when collected tests need ``../shared/crds`` and it is missing."""
    if not any(_needs_third_party_crds(item) for item in items):
        return
    try:
        paths.third_party_crd_files()
    except paths.MissingCrdsError as err:
        pytest.exit(str(err), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.fixture
def redis_client() -> Iterator[redis.Redis]:
    """A real Redis (GITOPS_REVERSER_REDIS_URL; `make test` starts a private one)."""
    client = connect(Settings.from_env().redis_url, client_name="tests")
    try:
        client.ping()
    except redis.ConnectionError as err:
        pytest.fail(f"integration tests need Redis (run them with `make test`): {err}")
    yield client
    client.close()


@pytest.fixture
def key_prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A fresh key prefix, removed after the test."""
    prefix = f"test:{uuid.uuid4().hex[:12]}"
    yield prefix
    keys = list(redis_client.scan_iter(f"{prefix}:*"))
    if keys:
        redis_client.delete(*keys)
