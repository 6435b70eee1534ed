"""The receiver store cases on fakeredis with Lua (unit tier)."""

from __future__ import annotations

import fakeredis
import pytest

from shared.store.keys import Keys
from tests.unit.receiver.store_cases import *  # noqa: F403
from tests.unit.receiver.store_cases import StoreUnderTest


@pytest.fixture
def store() -> StoreUnderTest:
    return StoreUnderTest(fakeredis.FakeRedis(decode_responses=True), Keys("test"))
