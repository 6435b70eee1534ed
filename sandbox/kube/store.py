"""Objects, one increasing resourceVersion counter, and a bounded event history.

Like etcd behind kube-apiserver, every write anywhere in the server takes the next value of a
single counter, so resourceVersions are comparable across kinds. Stored objects are never
mutated after they are stored (writers build a new dict), so readers and watchers may share
them. Watchers wait on one ``threading.Condition``; the history keeps the last ``history``
events, and a watch from an older version is answered 410 Expired as the watch cache does
(staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go, ``getAllEventsSinceLocked``).
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


class Store:
    """All objects of one API server, guarded by one lock and one condition."""

    def __init__(self, history: int) -> None:
        self._cond = threading.Condition(threading.RLock())
        self._objects: dict[GroupResource, dict[ObjectKey, dict[str, Any]]] = {}
        self._events: deque[Event] = deque(maxlen=max(history, 1))
        self._rv = 0
        self._closed = False

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the store lock across a read-modify-write."""
        with self._cond:
            yield

    @property
    def resource_version(self) -> int:
        """The latest resourceVersion handed out."""
        with self._cond:
            return self._rv

    @property
    def closed(self) -> bool:
        """True once the server stops; watchers end their streams."""
        return self._closed

    def get(self, resource: GroupResource, key: ObjectKey) -> dict[str, Any] | None:
        """The stored object (shared: do not mutate)."""
        with self._cond:
            return self._objects.get(resource, {}).get(key)

    def snapshot(
        self, resource: GroupResource, namespace: str | None
    ) -> tuple[list[dict[str, Any]], int]:
        """Objects of a resource (one namespace or all) sorted by namespace and name; the rv."""
        with self._cond:
            items = self._objects.get(resource, {})
            keys = sorted(k for k in items if namespace is None or k[0] == namespace)
            return [items[k] for k in keys], self._rv

    def snapshot_at(
        self, resource: GroupResource, namespace: str | None, rv: int
    ) -> list[dict[str, Any]] | None:
        """Objects of a resource as they were at ``rv``, sorted as ``snapshot`` sorts them:
        the current ones with every later event undone. None when the history no longer
        reaches back to ``rv`` (etcd compacted it: a chunked list's token has expired)."""
        with self._cond:
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
        with self._cond:
            key = _key_of(obj)
            old = self._objects.get(resource, {}).get(key)
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._objects.setdefault(resource, {})[key] = obj
            self._record(Event(self._rv, "MODIFIED" if old else "ADDED", resource, obj, old))
            return obj

    def remove(self, resource: GroupResource, obj: dict[str, Any]) -> dict[str, Any]:
        """Delete ``obj``; the DELETED event carries the deletion's resourceVersion."""
        with self._cond:
            key = _key_of(obj)
            old = self._objects.get(resource, {}).pop(key)
            self._rv += 1
            gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
            self._record(Event(self._rv, "DELETED", resource, gone, old))
            return gone

    def _record(self, event: Event) -> None:
        self._events.append(event)
        self._cond.notify_all()

    def events_after(self, rv: int) -> tuple[list[Event], int]:
        """Events above ``rv`` and the current rv; 410 Expired when some were dropped."""
        with self._cond:
            oldest = self._events[0].rv if self._events else self._rv + 1
            if rv < oldest - 1:
                raise expired(f"too old resource version: {rv} ({oldest - 1})")
            if rv >= self._rv:
                return [], self._rv
            return [e for e in self._events if e.rv > rv], self._rv

    def namespaced_objects(self, namespace: str) -> list[tuple[GroupResource, dict[str, Any]]]:
        """Every object stored in one namespace, across all resources."""
        with self._cond:
            return [
                (resource, obj)
                for resource, items in self._objects.items()
                for (ns, _), obj in sorted(items.items())
                if ns == namespace
            ]

    def wait_past(self, rv: int, timeout: float) -> bool:
        """Block until an event newer than ``rv`` exists, the store closes, or timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._rv > rv or self._closed, timeout)

    def close(self) -> None:
        """Wake every watcher so that open streams end."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def _key_of(obj: dict[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])
