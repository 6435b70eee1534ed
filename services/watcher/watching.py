"""A watch of one namespace on a thread of its own: finite, resumable sessions inside a trivial
reconnect loop (M1, M9).

The watcher's watches normally share one stream per type (``services.watcher.sharing``); this
is the fallback for a type whose cluster-wide list or watch is forbidden (a ClusterProvider
whose credentials reach only some namespaces), bounded by
``GITOPS_REVERSER_NAMESPACE_WATCHES``. Each session asks the channel where to start (its
cursor, or a fresh list of its namespace, ``services.watcher.channel``), then watches that
namespace from there and hands every event to the channel. The loop around sessions only
restarts them, with backoff on errors.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from services.watcher.channel import Channel
from shared.kube.api import StreamHandle
from shared.kube.errors import Expired, KubeError

logger = logging.getLogger(__name__)

#: Longest wait between attempts of a failing watch.
MAX_BACKOFF_S = 60.0
#: A burst watch gives up after this many failed sessions in a row.
BURST_ATTEMPTS = 3
#: A burst watch is drained once its stream stayed this quiet to the end of a session.
BURST_QUIET_S = 0.5


def backoff_s(failures: int) -> float:
    """How long to wait after ``failures`` failed attempts in a row."""
    return min(MAX_BACKOFF_S, 0.5 * 2.0 ** (failures - 1))


class WatchWorker:
    """A thread that keeps one channel's namespace watch running until stopped."""

    def __init__(
        self, channel: Channel, on_end: Callable[[WatchWorker], None] | None = None
    ) -> None:
        self.channel = channel
        self._on_end = on_end
        self._deps = channel.deps
        self._handle: StreamHandle | None = None
        key = channel.spec.key
        name = f"watch {key.namespace}/{key.group_resource}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish the event in hand and end (an open stream is cut)."""
        self.channel.stop()
        handle = self._handle
        if handle is not None:
            handle.stop()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._loop()
        finally:
            if self._on_end is not None:
                self._on_end(self)

    def _loop(self) -> None:
        """The reconnect loop: the outermost loop of this thread."""
        failures = 0
        while not self.channel.stopping:
            try:
                idle = self._session()
                failures = 0
                if self._deps.burst and idle:
                    return
            except Expired:
                self.channel.expired()
            except KubeError as err:
                if self.channel.stopping:
                    return  # its stream was cut on purpose
                failures += 1
                self._deps.metrics.restarts.labels(type(err).__name__).inc()
                if self.channel.stopping or not self._backoff(failures, err):
                    return
            except Exception:  # outermost loop of the thread: log, back off, go on
                failures += 1
                logger.exception("watch failed", extra=self.channel.log_extra())
                if not self._backoff(failures, None):
                    return

    def _backoff(self, failures: int, err: KubeError | None) -> bool:
        """Wait before the next attempt; False when the watch should give up."""
        if err is not None:
            at = self.channel.at.group_resource
            logger.warning("watch %s: %s", at, err, extra=self.channel.log_extra())
        if self._deps.burst and failures >= BURST_ATTEMPTS:
            return False
        return not self.channel.wait_stopped(backoff_s(failures))

    def _session(self) -> bool:
        """Start (list if needed), then watch until the stream ends; True when it ended quiet."""
        cursor = self.channel.start_point()
        if cursor is None:
            return False
        last_event = self._follow(cursor)
        return self._deps.monotonic() - last_event >= BURST_QUIET_S

    def _follow(self, cursor: str) -> float:
        """Watch from ``cursor``; returns when the last object event (or the start) was."""
        handle = self._handle = StreamHandle()
        last = self._deps.monotonic()
        if self.channel.stopping:
            return last
        spec = self.channel.spec
        stream = self.channel.client.watch(
            spec.resource, spec.key.namespace, cursor, self._deps.session_s, handle
        )
        for event in stream:
            if self.channel.on_event(event):
                last = self._deps.monotonic()
            if self.channel.stopping:
                break
        return last
