"""Objects, one increasing resourceVersion counter, and a bounded event history.

Like etcd behind kube-apiserver, every write anywhere in the server takes the next value of a
single counter, so resourceVersions are comparable across kinds. Stored objects are never
mutated after they are stored (writers build a new dict), so readers and watchers may share
them. The history keeps the last ``history`` events, and a watch from an older version is
answered 410 Expired as the watch cache does
(staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go, ``getAllEventsSinceLocked``).

Each open watch follows the store through a ``Follower``: a condition of its own on the store's
lock, woken only by events of its resource in its namespace (or any, for an all-namespaces
watch), as the cacher hands each watcher only what it dispatches to it. With every watch woken
by every event, a thousand open watches cost a thousand thread wake-ups and history scans per
write, which made the double, not the product, most of an edit's time in the many-GitTargets
benchmark. A follower woken by nothing since its cursor moves its cursor to the latest version
without reading the history, and one woken reads from the first event that concerns it, so a
quiet watch is never cut with 410 because others' events went past it: the real cacher keeps
an open watcher current in the same way. Its own events overflowing the history between two
reads still end it with 410, as before.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import expired

GroupResource = tuple[str, str]
ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects


@dataclass(frozen=True, slots=True)
class Event:
    """One change: the object after it (or as deleted), and the object before it."""

    rv: int
    type: str  # ADDED, MODIFIED or DELETED
    resource: GroupResource
    obj: dict[str, Any]
    old: dict[str, Any] | None


class Follower:
    """One open watch's view of the store: woken by the events it may have to send."""

    def __init__(self, store: Store, resource: GroupResource, namespace: str | None) -> None:
        self._store = store
        self.resource = resource
        self.namespace = namespace
        self.cond = threading.Condition(store._lock)
        #: The resourceVersion of the latest event this watch may have to send. At the start it
        #: is the store's own, so the first read checks the history (and answers a watch from
        #: a compacted version 410), as before.
        self.relevant = store._rv
        #: The resourceVersion of the first event this watch may have to send since it last
        #: read (None: none). Everything between its cursor and this event is of no concern to
        #: it, so a read starts here: writes to other namespaces or resources that overflowed
        #: the history lose it nothing. 0 until the first read, which starts at the cursor.
        self.first_unread: int | None = 0

    def concerns(self, event: Event) -> bool:
        """Whether ``event`` may be visible to this watch (selectors are the stream's)."""
        if event.resource != self.resource:
            return False
        return (
            self.namespace is None or event.obj["metadata"].get("namespace", "") == self.namespace
        )

    def events_after(self, rv: int) -> tuple[list[Event], int]:
        """As ``Store.events_after``, without reading the history when nothing this watch may
        send happened after ``rv``."""
        with self.cond:
            if self.relevant <= rv:  # nothing of concern past the cursor
                self.first_unread = None
                return [], max(rv, self._store._rv)
            start = rv if self.first_unread is None else max(rv, self.first_unread - 1)
            self.first_unread = None
            return self._store.events_after(start)

    def wait_past(self, rv: int, timeout: float) -> bool:
        """Block until an event this watch may send is newer than ``rv``, the store closes,
        or timeout."""
        with self.cond:
            return self.cond.wait_for(lambda: self.relevant > rv or self._store._closed, timeout)

    def close(self) -> None:
        """The watch has ended: it is woken no more."""
        with self.cond:
            self._store._followers.get(self.resource, set()).discard(self)


class Store:
    """All objects of one API server, guarded by one lock."""

    def __init__(self, history: int) -> None:
        self._lock = threading.RLock()
        self._followers: dict[GroupResource, set[Follower]] = {}
        self._objects: dict[GroupResource, dict[ObjectKey, dict[str, Any]]] = {}
        self._events: deque[Event] = deque(maxlen=max(history, 1))
        self._rv = 0
        self._closed = False

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store lock across a read-modify-write."""
        with self._lock:
            yield

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        with self._lock:
            return self._rv

    @property
    def closed(self) -> bool:
        """True once the server stops; watchers end their streams."""
        return self._closed

    def get(self, resource: GroupResource, key: ObjectKey) -> dict[str, Any] | None:
        """The stored object (shared: do not mutate)."""
        with self._lock:
            return self._objects.get(resource, {}).get(key)

    def snapshot(
        self, resource: GroupResource, namespace: str | None
    ) -> tuple[list[dict[str, Any]], int]:
        """Objects of a resource (one namespace or all) sorted by namespace and name; the rv."""
        with self._lock:
            items = self._objects.get(resource, {})
            keys = sorted(k for k in items if namespace is None or k[0] == namespace)
            return [items[k] for k in keys], self._rv

    def snapshot_at(
        self, resource: GroupResource, namespace: str | None, rv: int
    ) -> list[dict[str, Any]] | None:
        """Objects of a resource as they were at ``rv``, sorted as ``snapshot`` sorts them:
        the current ones with every later event undone. None when the history no longer
        reaches back to ``rv`` (etcd compacted it: a chunked list's token has expired)."""
        with self._lock:
            oldest = self._events[0].rv if self._events else self._rv + 1
            if rv < oldest - 1 or rv > self._rv:
                return None
            items = dict(self._objects.get(resource, {}))
            for event in reversed(self._events):
                if event.rv <= rv:
                    break
                if event.resource != resource:
                    continue
                key = _key_of(event.obj)
                if event.old is None:
                    items.pop(key, None)
                else:
                    items[key] = event.old
            keys = sorted(k for k in items if namespace is None or k[0] == namespace)
            return [items[k] for k in keys]

    def put(self, resource: GroupResource, obj: dict[str, Any]) -> dict[str, Any]:
        """Store ``obj`` (created or changed) under the next resourceVersion; wake watchers."""
        with self._lock:
            key = _key_of(obj)
            old = self._objects.get(resource, {}).get(key)
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._objects.setdefault(resource, {})[key] = obj
            self._record(Event(self._rv, "MODIFIED" if old else "ADDED", resource, obj, old))
            return obj

    def remove(self, resource: GroupResource, obj: dict[str, Any]) -> dict[str, Any]:
        """Delete ``obj``; the DELETED event carries the deletion's resourceVersion."""
        with self._lock:
            key = _key_of(obj)
            old = self._objects.get(resource, {}).pop(key)
            self._rv += 1
            gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
            self._record(Event(self._rv, "DELETED", resource, gone, old))
            return gone

    def _record(self, event: Event) -> None:
        self._events.append(event)
        for follower in self._followers.get(event.resource, ()):
            if follower.concerns(event):
                follower.relevant = event.rv
                if follower.first_unread is None:
                    follower.first_unread = event.rv
                follower.cond.notify()

    def follow(self, resource: GroupResource, namespace: str | None) -> Follower:
        """A new watch's follower; ``Follower.close`` when the watch ends."""
        with self._lock:
            follower = Follower(self, resource, namespace)
            self._followers.setdefault(resource, set()).add(follower)
            return follower

    def events_after(self, rv: int) -> tuple[list[Event], int]:
        """Events above ``rv`` and the current rv; 410 Expired when some were dropped."""
        with self._lock:
            oldest = self._events[0].rv if self._events else self._rv + 1
            if rv < oldest - 1:
                raise expired(f"too old resource version: {rv} ({oldest - 1})")
            if rv >= self._rv:
                return [], self._rv
            newer: list[Event] = []
            for event in reversed(self._events):  # the newest first: only what is past rv
                if event.rv <= rv:
                    break
                newer.append(event)
            newer.reverse()
            return newer, self._rv

    def open_watches(self) -> dict[GroupResource, int]:
        """How many watch streams are open now, by resource (kube-apiserver's
        ``apiserver_registered_watchers`` gauge counts the same, by group, version and kind)."""
        with self._lock:
            return {r: len(found) for r, found in self._followers.items() if found}

    def namespaced_objects(self, namespace: str) -> list[tuple[GroupResource, dict[str, Any]]]:
        """Every object stored in one namespace, across all resources."""
        with self._lock:
            return [
                (resource, obj)
                for resource, items in self._objects.items()
                for (ns, _), obj in sorted(items.items())
                if ns == namespace
            ]

    def close(self) -> None:
        """Wake every watcher so that open streams end."""
        with self._lock:
            self._closed = True
            for followers in self._followers.values():
                for follower in followers:
                    follower.cond.notify_all()


def _key_of(obj: dict[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])
