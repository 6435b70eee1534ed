"""The hand-controls suite on fakeredis (unit tier)."""

from __future__ import annotations

import fakeredis
import pytest

from shared.store.keys import Keys
from tests.suites.controls_suite import *  # noqa: F403
from tests.suites.store_suite import StoreUnderTest


@pytest.fixture
def store() -> StoreUnderTest:
    return StoreUnderTest(fakeredis.FakeRedis(decode_responses=True), Keys("test"))
