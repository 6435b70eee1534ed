"""The hand-controls suite on a real redis-server (integration tier)."""

from __future__ import annotations

import pytest
import redis

from shared.store.keys import Keys
from tests.suites.controls_suite import *  # noqa: F403
from tests.suites.store_suite import StoreUnderTest

pytestmark = pytest.mark.integration


@pytest.fixture
def store(redis_client: redis.Redis, key_prefix: str) -> StoreUnderTest:
    return StoreUnderTest(redis_client, Keys(key_prefix))
