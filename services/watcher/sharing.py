"""Watches shared per type: one cluster-wide stream per (cluster, resource type), fanned out in
the process to every channel of that type (issue 29).

A channel is one (GitTarget, type, namespace) watch (``services.watcher.channel``): its
cursor, its seen objects, its selectors and its publishing, all as before. A ``SharedWatch``
is one thread and one watch request for every channel of its type on its cluster, however many
namespaces they are in, as client-go's shared informers serve every controller of a type from
one watch. Its thread:

1. watches the type in every namespace from the lowest position any channel is at, and hands
   each event to the channels of the event's namespace that are not past it yet. Positions are
   compared as numbers: resourceVersions of one resource are comparable (KEP-5504, stable in
   Kubernetes 1.35; etcd's revision before it, and the sandbox's single counter). A type whose
   versions are not numbers goes back to a watch per namespace;
2. on a BOOKMARK and when a session ends, moves every channel's cursor to where the stream is
   (one Redis round trip for them all): every event up to there was handed to every channel,
   so a quiet namespace's cursor stays recent and a restart resumes every channel from about
   the same place;
4. on ``410 Gone``, the channels at the lowest position list again (their cursor expired); the
   others resume. A join cuts the stream, so the new channel is admitted at once.

A cluster-wide watch can be forbidden where each namespace's is not (a ClusterProvider whose
credentials reach only some namespaces; the chart's ClusterRole grants the local cluster's
``watcher.watchedResources`` everywhere). Then that type falls back to a watch per namespace,
each on a thread of its own (``services.watcher.watching``), at most
``GITOPS_REVERSER_NAMESPACE_WATCHES`` of them in the process: the ones past it wait, with a
warning, until one ends. So the watcher's threads and watch connections grow with the resource
types its rules select, not with the namespaces, unless that fallback is in use.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from contextlib import ExitStack

from services.watcher.admitting import Members, NotShareable, position_of
from services.watcher.channel import Channel, WatchDeps
from services.watcher.watching import BURST_ATTEMPTS, BURST_QUIET_S, backoff_s
from shared.kube.api import KubeClient, StreamHandle, WatchEvent
from shared.kube.errors import Expired, KubeError
from shared.model.resources import ApiResource

logger = logging.getLogger(__name__)

#: The HTTP code of a request the caller's identity may not make (RBAC).
FORBIDDEN = 403
#: How a 410 names the oldest version the history still reaches: "too old resource version:
#: <asked> (<oldest kept - 1>)", the watch cache's and etcd's wording (and the sandbox's).
_TOO_OLD = re.compile(r"too old resource version: \d+ \((\d+)\)")

__all__ = ["NotShareable", "SharedWatch", "position_of"]


class SharedWatch(Members):
    """One cluster-wide watch, fanned out to the channels of one type; two threads."""

    def __init__(
        self,
        resource: ApiResource,
        client: KubeClient,
        deps: WatchDeps,
        on_unshareable: Callable[[SharedWatch, list[Channel]], None],
    ) -> None:
        super().__init__(resource.group_resource, deps)
        self.resource = resource
        self._client = client
        self._on_unshareable = on_unshareable
        name = f"shared watch {resource.group_resource}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the stream's thread and the admitting thread."""
        self._admitter.start()
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for both threads; True when they have ended."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        self._admitter.join(timeout)
        return not self._admitter.is_alive()

    def _run(self) -> None:
        """The reconnect loop: the outermost loop of this thread."""
        failures = 0
        while True:
            try:
                idle = self._session()
                failures = 0
            except NotShareable as err:
                self._unshareable(str(err))
                return
            except KubeError as err:
                if err.code == FORBIDDEN:
                    self._unshareable(str(err))
                    return
                failures += 1
                self._deps.metrics.restarts.labels(type(err).__name__).inc()
                logger.warning("shared watch %s: %s", self.resource.group_resource, err)
                idle = self._failed(failures)
            except Exception:  # outermost loop of the thread: log, back off, go on
                failures += 1
                logger.exception("shared watch %s failed", self.resource.group_resource)
                idle = self._failed(failures)
            if self._finished(idle):
                return

    def _failed(self, failures: int) -> bool:
        """Back off after a failed session; True when a burst watch should give up."""
        if self._deps.burst and failures >= BURST_ATTEMPTS:
            return True
        self._wake.wait(backoff_s(failures))
        return False

    def _finished(self, idle: bool) -> bool:
        """Whether the threads end: nothing left to feed, or (burst) drained."""
        with self._lock:
            done = not self._active and not self._joining
            if self._deps.burst and idle and not self._joining:
                done = True
            if done:
                self._closed = True
        if done:
            self._joined.set()  # the admitting thread sees it closed
        return done

    def _unshareable(self, why: str) -> None:
        """Hand every channel to a watch of its own namespace."""
        with self._lock:
            self._closed = True
            channels = [*self._active.values(), *self._joining.values()]
            self._active.clear()
            self._joining.clear()
            self._by_namespace.clear()
            self._position.clear()
        self._joined.set()
        logger.warning(
            "%s cannot be watched cluster-wide (%s): %d watches fall back to one per namespace",
            self.resource.group_resource,
            why,
            len(channels),
        )
        self._on_unshareable(self, channels)

    def _session(self) -> bool:
        """Watch from the lowest position until the stream ends; True when it ended quiet."""
        self._wake.clear()
        self._recheck_cursors()
        with self._lock:
            if self._why_not:
                raise NotShareable(self._why_not)
            start = min(self._position.values(), default=0)
            self._at = start
        if not start:  # nobody started yet: wait for the first (a burst looks again soon)
            return not self._wake.wait(1.0 if self._deps.burst else None)
        handle = self._handle = StreamHandle()
        try:
            if self._wake.is_set():
                return False  # one started behind, or left, meanwhile: look again
            return self._follow(start, handle)
        finally:
            with self._lock:
                self._handle = None
                self._at = 0

    def _follow(self, start: int, handle: StreamHandle) -> bool:
        last = self._deps.monotonic()
        at = start
        try:
            stream = self._client.watch(self.resource, "", str(start), self._deps.session_s, handle)
            for event in stream:
                version = position_of(event.resource_version)
                at = max(at, version)
                if event.type == "BOOKMARK":
                    self._catch_up(at)
                elif self._dispatch(event, version):
                    last = self._deps.monotonic()
                if self._wake.is_set():
                    break
        except Expired as err:
            self._expire(str(err))
            return False
        except KubeError:
            if not handle.stopped:
                raise  # else: the stream was cut on purpose, mid-read
        self._catch_up(at)
        return self._deps.monotonic() - last >= BURST_QUIET_S

    def _recheck_cursors(self) -> None:
        """Redis lost the cursor of a channel that runs (flushed, or restarted empty): it lists
        again (``lostcursor``, D2), as a watch of its own found at its next session's start."""
        with self._lock:
            active = list(self._active.items())
        found = self._deps.state.cursors_many([channel.at for _, channel in active])
        with self._lock:
            for (key, channel), cursor in zip(active, found, strict=True):
                if cursor is None and self._active.get(key) is channel:
                    self._rejoin(key, channel)

    def _dispatch(self, event: WatchEvent, version: int) -> int:
        """Hand an object event to the channels of its namespace not past it; 1 if any took
        it as an object event."""
        meta = event.object.get("metadata")
        namespace = str(meta.get("namespace") or "") if isinstance(meta, dict) else ""
        with self._lock:
            self._at = max(self._at, version)  # one that starts from now on checks this
            members = self._by_namespace.get(namespace, {})
            takers = [(k, c) for k, c in members.items() if self._position[k] < version]
        took = 0
        for key, channel in takers:
            took |= channel.on_event(event)
            with self._lock:
                if self._active.get(key) is channel:
                    self._position[key] = self._saved[key] = version
        return took

    def _catch_up(self, at: int) -> None:
        """Every event up to ``at`` was handed to every channel: move their cursors there."""
        with self._lock:
            self._at = max(self._at, at)
            behind = [(k, c) for k, c in self._active.items() if self._saved[k] < at]
            for key, _ in behind:
                self._position[key] = max(self._position[key], at)
        if not behind:
            return
        with ExitStack() as held:
            moving = []
            for _, channel in behind:
                held.enter_context(channel.unit)
                if not channel.stopping:
                    moving.append(channel.at)
            self._deps.state.advance_many(moving, str(at))
        with self._lock:
            for key, channel in behind:
                if self._active.get(key) is channel:
                    self._saved[key] = max(self._saved[key], at)

    def _expire(self, message: str) -> None:
        """410 Gone: the channels the history no longer reaches list again (those below the
        oldest version it keeps, when the answer names it; else those at the lowest
        position); the others resume."""
        found = _TOO_OLD.search(message)
        with self._lock:
            if not self._position:
                return
            lowest = min(self._position.values())
            floor = max(int(found.group(1)) if found else 0, lowest + 1)  # the lowest at least
            gone = [(k, c) for k, c in self._active.items() if self._position[k] < floor]
            for key, channel in gone:
                self._rejoin(key, channel)
        for _, channel in gone:
            channel.expired()
