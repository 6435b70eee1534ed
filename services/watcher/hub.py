"""Which thread feeds each watch: the shared watch of its type, or (the fallback) a watch of its
own namespace, at most ``GITOPS_REVERSER_NAMESPACE_WATCHES`` of those (issue 29).

``WatchHub.member(spec, client)`` gives the supervisor a ``Member``: a channel with the
start/stop/quiesce/join a watch had when it was a thread of its own, so the supervisor's rules
(never two feeders of one key's cursor; a changed spec stopped and quiet before its successor
starts) are unchanged. See ``services.watcher.sharing`` for the design.
"""

from __future__ import annotations

import logging
import threading
from collections import deque

from services.watcher.channel import Channel, WatchDeps
from services.watcher.sharing import SharedWatch
from services.watcher.watching import WatchWorker
from shared.decide.watches import WatchSpec
from shared.kube.api import KubeClient

logger = logging.getLogger(__name__)

#: A shared watch's key: the cluster (ClusterProvider) and the type's group, version, resource.
TypeKey = tuple[str, str, str, str]


def type_key(spec: WatchSpec) -> TypeKey:
    """The shared watch a watch belongs to."""
    res = spec.resource
    return (spec.cluster, res.group, res.version, res.resource)


class WatchHub:
    """The shared watches of one watcher and its namespace watches (the fallback)."""

    def __init__(self, deps: WatchDeps, namespace_watches: int) -> None:
        self._deps = deps
        self._max_namespaced = namespace_watches
        self._lock = threading.Lock()
        self._shared: dict[TypeKey, SharedWatch] = {}
        self._namespaced: set[TypeKey] = set()  # types whose cluster-wide watch was refused
        self._feeders: dict[Channel, SharedWatch | WatchWorker] = {}
        self._waiting: deque[Channel] = deque()  # namespace watches past the limit

    def member(self, spec: WatchSpec, client: KubeClient) -> Member:
        """A watch of ``spec`` through ``client``, not started yet."""
        return Member(self, Channel(spec, client, self._deps))

    def feeders(self) -> int:
        """Feeders now: one per shared watch (two threads each), one per namespace watch."""
        with self._lock:
            return len({id(f) for f in self._feeders.values()})

    def attach(self, channel: Channel) -> None:
        """Start feeding ``channel``."""
        key = type_key(channel.spec)
        with self._lock:
            if key in self._namespaced:
                self._run_namespaced(channel)
                return
            shared = self._shared.get(key)
            if shared is None or not shared.add(channel):
                shared = SharedWatch(
                    channel.spec.resource, channel.client, self._deps, self._unshareable
                )
                shared.add(channel)
                self._shared[key] = shared
                shared.start()
            self._feeders[channel] = shared

    def detach(self, channel: Channel) -> None:
        """Stop ``channel`` (it publishes nothing after the unit in hand) and stop feeding it."""
        channel.stop()
        with self._lock:
            feeder = self._feeders.pop(channel, None)
            if channel in self._waiting:
                self._waiting.remove(channel)
            if isinstance(feeder, WatchWorker):
                feeder.stop()  # its thread frees its slot as it ends
        if isinstance(feeder, SharedWatch):
            feeder.remove(channel)

    def join(self, channel: Channel, timeout: float) -> bool:
        """Wait for ``channel``'s feeder to end (burst mode); True when it has."""
        with self._lock:
            feeder = self._feeders.get(channel)
            waiting = channel in self._waiting
        if feeder is None:
            return not waiting  # one waiting for a namespace watch has not run yet
        if not feeder.join(timeout):
            return False
        with self._lock:  # a shared watch may have handed it to a namespace watch meanwhile
            now = self._feeders.get(channel)
            return now is None or now is feeder

    def _worker_ended(self, worker: WatchWorker) -> None:
        """A namespace watch's thread ended: its slot goes to the longest waiting one."""
        with self._lock:
            if self._feeders.get(worker.channel) is worker:
                del self._feeders[worker.channel]
            self._start_waiting()

    def _unshareable(self, shared: SharedWatch, channels: list[Channel]) -> None:
        """A shared watch cannot go on: its channels get a namespace watch each."""
        with self._lock:
            for key, found in list(self._shared.items()):
                if found is shared:
                    del self._shared[key]
                    self._namespaced.add(key)
            for channel in channels:
                if self._feeders.get(channel) is shared:
                    del self._feeders[channel]
                    self._run_namespaced(channel)

    def _running_namespaced(self) -> int:
        return sum(isinstance(f, WatchWorker) for f in self._feeders.values())

    def _run_namespaced(self, channel: Channel) -> None:
        """Under the lock: a namespace watch for ``channel``, or a place in the queue."""
        if self._running_namespaced() >= self._max_namespaced:
            self._waiting.append(channel)
            logger.warning(
                "watch %s waits: %d namespace watches run already (NAMESPACE_WATCHES)",
                channel.at.group_resource,
                self._max_namespaced,
                extra=channel.log_extra(),
            )
            return
        worker = WatchWorker(channel, self._worker_ended)
        self._feeders[channel] = worker
        worker.start()

    def _start_waiting(self) -> None:
        """Under the lock: start the longest waiting namespace watch, if there is room."""
        while self._waiting and self._running_namespaced() < self._max_namespaced:
            channel = self._waiting.popleft()
            if not channel.stopping:
                self._run_namespaced(channel)


class Member:
    """One watch as the supervisor runs it: started, stopped, quiesced and joined."""

    def __init__(self, hub: WatchHub, channel: Channel) -> None:
        self._hub = hub
        self.channel = channel
        self.spec = channel.spec

    def start(self) -> None:
        """Start feeding the watch."""
        self._hub.attach(self.channel)

    def stop(self) -> None:
        """Publish nothing after the unit in hand; stop feeding the watch."""
        self._hub.detach(self.channel)

    def quiesce(self, timeout: float) -> bool:
        """After ``stop``: True once no unit of work is in hand (none will start)."""
        return self.channel.quiesce(timeout)

    def join(self, timeout: float | None = None) -> bool:
        """Wait until whatever feeds the watch has ended (burst mode)."""
        return self._hub.join(self.channel, 0.2 if timeout is None else timeout)
