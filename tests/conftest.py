"""Fixtures every tier may use."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis

from shared.settings import Settings
from shared.store.connection import connect


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
