"""The unit tier: pure tests, each bounded by its own timeout.

The global ceiling (``timeout`` in pyproject.toml) is sized for the e2e tier; a unit test that
hangs should fail in a minute, not in five. The bound is generous because it must hold on a
loaded two-core machine, hypothesis tests included (the slowest takes about 6 s when quiet);
it catches a hang, it does not measure speed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: Seconds one unit test may take before pytest-timeout fails it.
UNIT_TIMEOUT_S = 60

_HERE = Path(__file__).resolve().parent


def bound_each(items: list[pytest.Item], folder: Path) -> None:
    """Bound every test under ``folder`` (a test's own ``timeout`` mark, if any, wins)."""
    for item in items:
        if item.path.is_relative_to(folder) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(UNIT_TIMEOUT_S))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Bound every test of this tier."""
    bound_each(items, _HERE)
