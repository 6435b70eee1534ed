"""Runs the watches the reconciler wants: starts new ones, stops gone ones, restarts changed ones.

Each watch is a ``Member`` of the watch hub (``services.watcher.hub``): fed by its type's
shared watch, or by a watch of its own namespace. Two feeders must never serve one watch key at
once (they would race on its cursor), so a watch whose spec changed is stopped first and
started again only once the old one is quiet (it has no unit of work in hand and will start
none); one that is still busy is waited for on the next apply. A quiet watch's feeder may still
sit in a blocking read of a stream that has sent nothing yet: it is a daemon thread and
publishes nothing more for it, so shutdown does not wait for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from services.watcher.hub import Member
from shared.decide.watches import WatchKey, WatchSpec

logger = logging.getLogger(__name__)

#: How long an apply waits for a stopped watch's thread before leaving it for the next apply.
STOP_WAIT_S = 2.0
#: How long shutdown waits for every watch to finish the event in hand.
SHUTDOWN_WAIT_S = 30.0


class Supervisor:
    """The running watches, by key."""

    def __init__(self, start: Callable[[WatchSpec], Member | None]) -> None:
        self._start = start
        self._running: dict[WatchKey, Member] = {}
        self._stopping: dict[WatchKey, Member] = {}

    def running(self) -> dict[WatchKey, WatchSpec]:
        """The specs of the watches running now."""
        return {key: worker.spec for key, worker in self._running.items()}

    def apply(self, desired: Mapping[WatchKey, WatchSpec]) -> None:
        """Make the running watches match ``desired``."""
        for key, worker in list(self._running.items()):
            if desired.get(key) != worker.spec:
                worker.stop()
                self._stopping[key] = self._running.pop(key)
        self._reap(STOP_WAIT_S)
        for key, spec in desired.items():
            if key in self._running or key in self._stopping:
                continue
            started = self._start(spec)
            if started is not None:
                started.start()
                self._running[key] = started

    def _reap(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        for key, worker in list(self._stopping.items()):
            worker.stop()  # again: a stream opened after the first stop is cut now
            if worker.quiesce(max(0.0, deadline - time.monotonic())):
                del self._stopping[key]

    def busy_keys(self) -> set[WatchKey]:
        """Every watch that runs or is still ending."""
        return set(self._running) | set(self._stopping)

    def wait(self, stop: threading.Event, poll_s: float = 0.2) -> bool:
        """Wait until every watch ends by itself (burst mode); False if ``stop`` came first."""
        for key, worker in list(self._running.items()):
            while not worker.join(poll_s):
                if stop.is_set():
                    return False
            del self._running[key]
        return True

    def stop_all(self, wait_s: float = SHUTDOWN_WAIT_S) -> bool:
        """Stop every watch; True when all ended within ``wait_s``."""
        for key, worker in list(self._running.items()):
            worker.stop()
            self._stopping[key] = self._running.pop(key)
        deadline = time.monotonic() + wait_s
        while self._stopping and time.monotonic() < deadline:
            self._reap(min(0.5, max(0.0, deadline - time.monotonic())))
        if self._stopping:
            logger.warning("%d watches did not stop in time", len(self._stopping))
        return not self._stopping
