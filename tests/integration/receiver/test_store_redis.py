"""The receiver store cases on a real redis-server (integration tier).

On a redis-server of this module's own, not the tiers' shared one: a case flushes Redis's
script cache (``SCRIPT FLUSH``), which is server-wide. On the shared Redis it struck scripts of
tests running beside it on other pytest-xdist workers between their load and their call
(``NoScriptError`` twice over: redis-py reloads a script once).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from shared.store.keys import Keys
from tests.integration.redis_server import RedisServer
from tests.unit.receiver.store_cases import *  # noqa: F403
from tests.unit.receiver.store_cases import StoreUnderTest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def own_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    server = RedisServer(Path(tmp_path_factory.mktemp("store-redis")))
    server.start()
    client = server.client()
    yield client
    client.close()
    server.stop()


@pytest.fixture
def store(own_redis: redis.Redis) -> StoreUnderTest:
    return StoreUnderTest(own_redis, Keys(f"test:{uuid.uuid4().hex[:12]}"))
