"""Waiting for an object to show a change: a watch, listed again when it ends, to a deadline.

A watch wakes the command as soon as the object changes (no polling); the server ends each
stream at its ``timeoutSeconds``, and a 410 means its history moved on: both list again and
watch from the new resourceVersion, until ``done`` says yes or the deadline passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from services.cli.errors import TimedOut
from shared.kube.api import KubeClient, Obj, StreamHandle
from shared.kube.errors import Expired
from shared.model.resources import ApiResource

T = TypeVar("T")


def _named(obj: Obj, name: str) -> bool:
    return bool((obj.get("metadata") or {}).get("name") == name)


def wait_for(
    kube: KubeClient,
    res: ApiResource,
    namespace: str,
    name: str,
    *,
    done: Callable[[Obj], T | None],
    timeout_s: float,
    what: str,
    monotonic: Callable[[], float] = time.monotonic,
) -> T:
    """``done(obj)`` once it is not None; TimedOut after ``timeout_s`` (``what`` says what
    was awaited)."""
    deadline = monotonic() + timeout_s
    while True:
        listing = kube.list(res, namespace)
        for obj in listing.items:
            if _named(obj, name) and (found := done(obj)) is not None:
                return found
        remaining = deadline - monotonic()
        if remaining <= 0:
            raise TimedOut(f"timed out after {timeout_s:g}s waiting for {what}")
        try:
            stream: Any = kube.watch(
                res, namespace, listing.resource_version, max(1, int(remaining)), StreamHandle()
            )
            for event in stream:
                if event.type in ("ADDED", "MODIFIED") and _named(event.object, name):
                    found = done(event.object)
                    if found is not None:
                        return found
                if monotonic() >= deadline:
                    break
        except Expired:
            continue  # list again: the history the watch needed is gone
