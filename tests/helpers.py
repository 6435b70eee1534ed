"""Test helpers shared by the tiers."""

from __future__ import annotations

import time
from collections.abc import Callable

#: How often a cross-process condition is re-checked. Another process's state in Redis or git
#: offers nothing to block on from here, so these waits poll a condition under a deadline;
#: in-process waits use events instead.
POLL_S = 0.05


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Return as soon as ``condition()`` holds; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(POLL_S)


def plural_of(kind: str) -> str:
    """The resource (plural) name of a custom kind, as its CRD declares it."""
    import yaml

    from sandbox.paths import all_crd_files

    for path in all_crd_files():
        for crd in yaml.safe_load_all(path.read_text()):
            if crd and crd.get("spec", {}).get("names", {}).get("kind") == kind:
                return str(crd["spec"]["names"]["plural"])
    raise KeyError(kind)
