"""Test helpers shared by the tiers."""

from __future__ import annotations

import time
from collections.abc import Callable

#: How often a cross-process condition is re-checked. Another process's state in Redis or git
#: offers nothing to block on from here, so these waits poll a condition under a deadline;
#: in-process waits use events instead.
POLL_S = 0.05


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, poll: float = POLL_S
) -> None:
    """Return as soon as ``condition()`` holds; fail the test after ``timeout`` seconds.

    ``poll``: how often to look again, longer for a condition that costs processes to read."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(poll)
