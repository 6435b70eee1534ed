"""The channels of one shared watch, and the thread that admits the ones that join (issue 29).

A channel that joins a shared watch (``services.watcher.sharing``) must first find where it
starts: its cursor, or a list of its own namespace (``Channel.start_point``). That happens on
this thread, beside the stream, so the open stream keeps going (and keeps its place in the API
server's history) while a thousand new GitTargets list their namespaces. Once started, a
channel is *active* at the version it started from: the stream hands it every event of its
namespace past that version. One that started behind the stream (an event of its type came
between its list and now) makes the stream reopen from its version. A channel whose start
fails (forbidden in its namespace, a list that keeps expiring) waits and tries again alone,
with the backoff a watch of its own had; the others go on.
"""

from __future__ import annotations

import logging
import threading

from services.watcher.channel import Channel, WatchDeps
from services.watcher.watching import BURST_ATTEMPTS, backoff_s
from shared.decide.watches import WatchKey
from shared.kube.api import StreamHandle
from shared.kube.errors import KubeError

logger = logging.getLogger(__name__)


class NotShareable(Exception):
    """This type cannot be watched cluster-wide here: forbidden, or versions not numbers."""


def position_of(resource_version: str) -> int:
    """A resourceVersion as a number (KEP-5504); NotShareable when it is not one."""
    if not resource_version.isdigit():
        raise NotShareable(f"resourceVersion {resource_version!r} is not a number")
    return int(resource_version)


class Members:
    """Who a shared watch feeds, from where; the admitting thread."""

    def __init__(self, name: str, deps: WatchDeps) -> None:
        self._deps = deps
        self._lock = threading.Lock()
        self._joining: dict[WatchKey, Channel] = {}
        self._retry: dict[WatchKey, tuple[int, float]] = {}  # failures, not before (monotonic)
        self._active: dict[WatchKey, Channel] = {}
        self._by_namespace: dict[str, dict[WatchKey, Channel]] = {}
        self._position: dict[WatchKey, int] = {}  # the last version handed to the channel
        self._saved: dict[WatchKey, int] = {}  # the channel's cursor in Redis, as last written
        self._closed = False
        #: Where the open stream is (0: none is open): the version it started from, then its
        #: last event's or bookmark's.
        self._at = 0
        self._why_not = ""  # set when a start found versions that are not numbers
        self._wake = threading.Event()  # the stream's thread: reopen, or look again
        self._joined = threading.Event()  # the admitting thread: someone joined, or closed
        self._handle: StreamHandle | None = None
        self._admitter = threading.Thread(
            target=self._admit_loop, name=f"admit {name}", daemon=True
        )

    def add(self, channel: Channel) -> bool:
        """Feed ``channel`` from now on; False when this watch has ended (make another)."""
        with self._lock:
            if self._closed:
                return False
            self._joining[channel.spec.key] = channel
        self._joined.set()
        return True

    def remove(self, channel: Channel) -> None:
        """Stop feeding ``channel`` (stopped already, so it publishes nothing more)."""
        key = channel.spec.key
        with self._lock:
            if self._active.get(key) is channel:
                self._leave(key)
            if self._joining.get(key) is channel:
                del self._joining[key]
                self._retry.pop(key, None)
            empty = not self._active and not self._joining
        if empty:
            self._interrupt()  # so the threads end

    def _interrupt(self) -> None:
        """Wake the stream's thread, cutting its open stream."""
        self._wake.set()
        handle = self._handle
        if handle is not None:
            handle.stop()

    def _leave(self, key: WatchKey) -> None:
        """Under the lock: ``key`` is fed no more (until it is admitted again)."""
        del self._active[key]
        del self._by_namespace[key.namespace][key]
        self._position.pop(key, None)
        self._saved.pop(key, None)

    def _rejoin(self, key: WatchKey, channel: Channel) -> None:
        """Under the lock: an active channel starts again (a lost or expired cursor)."""
        self._leave(key)
        self._joining[key] = channel
        self._joined.set()

    def _admit_loop(self) -> None:
        """The admitting thread: start whoever joined, until the watch is closed."""
        while True:
            self._joined.clear()
            with self._lock:
                if self._closed:
                    return
            wait_s = self._admit_due()
            self._joined.wait(wait_s)

    def _admit_due(self) -> float | None:
        """Start every joined channel that is due; returns how long until the next one that
        waits to try again is due (None: none waits)."""
        now = self._deps.monotonic()
        with self._lock:
            due = [
                (key, channel)
                for key, channel in self._joining.items()
                if self._retry.get(key, (0, 0.0))[1] <= now
            ]
        for key, channel in due:
            try:
                cursor = None if channel.stopping else channel.start_point()
            except Exception as err:  # this channel's own start failed: only it waits
                self._retry_later(key, channel, err)
                continue
            self._activate(key, channel, cursor)
        with self._lock:
            retries = [self._retry[key][1] for key in self._joining if key in self._retry]
        return max(0.0, min(retries) - self._deps.monotonic()) if retries else None

    def _activate(self, key: WatchKey, channel: Channel, cursor: str | None) -> None:
        """The channel starts at ``cursor``: the stream feeds it from there."""
        with self._lock:
            if self._closed or self._joining.get(key) is not channel:
                return  # removed, or handed to a namespace watch, meanwhile
            if cursor is None:
                del self._joining[key]  # stopped
                return
            try:
                position = position_of(cursor)
            except NotShareable as err:
                self._why_not = str(err)
                behind = True
            else:
                del self._joining[key]
                self._retry.pop(key, None)
                self._active[key] = channel
                self._by_namespace.setdefault(key.namespace, {})[key] = channel
                self._position[key] = self._saved[key] = position
                behind = self._at == 0 or position < self._at
        if behind:  # no stream yet, or it is past this channel's start: (re)open it
            self._interrupt()

    def _retry_later(self, key: WatchKey, channel: Channel, err: Exception) -> None:
        where = channel.at.group_resource
        if isinstance(err, KubeError):
            self._deps.metrics.restarts.labels(type(err).__name__).inc()
            logger.warning("watch %s: %s", where, err, extra=channel.log_extra())
        else:
            logger.exception("watch %s failed", where, extra=channel.log_extra())
        with self._lock:
            if self._joining.get(key) is not channel:
                return
            failures = self._retry.get(key, (0, 0.0))[0] + 1
            if self._deps.burst and failures >= BURST_ATTEMPTS:
                del self._joining[key]  # a burst gives up on it, as a namespace watch would
                self._retry.pop(key, None)
                empty = not self._active and not self._joining
            else:
                self._retry[key] = (failures, self._deps.monotonic() + backoff_s(failures))
                empty = False
        if empty:
            self._interrupt()
