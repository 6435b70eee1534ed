"""The ``rig`` fixture: a fresh receiver app over a fresh fake Redis for each test."""

from __future__ import annotations

import pytest

from tests.unit.receiver.rig import Rig, make_rig


@pytest.fixture
def rig() -> Rig:
    return make_rig()
