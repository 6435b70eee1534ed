"""Watch streams: newline-delimited JSON events, as the watch cache serves them.

From a resourceVersion the stream replays the kept events after it, then goes live; with
none (or "0") it starts with a synthetic ADDED per current object. Selectors apply to each
event as in the cacher (staging/src/k8s.io/apiserver/pkg/storage/cacher/cache_watcher.go):
an object that starts matching is ADDED, one that stops matching is DELETED for that
watcher. A resourceVersion older than the history is an ERROR event carrying a 410 Expired
Status (the stream itself answers 200). BOOKMARKs carry only kind, apiVersion and
metadata.resourceVersion; ``timeoutSeconds`` ends the stream; so does stopping the server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sandbox.kube.errors import ApiError
from sandbox.kube.objects import in_version
from sandbox.kube.resources import ResourceType
from sandbox.kube.selectors import Predicate
from sandbox.kube.store import Event, Follower, Store

Obj = dict[str, Any]
Encode = Callable[[Obj], Obj]

# The real server picks a random timeout in [minRequestTimeout, 2*minRequestTimeout) with
# minRequestTimeout 1800 s; one fixed value is enough for a double.
DEFAULT_TIMEOUT_SECONDS = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class WatchRequest:
    """One watch: what to watch, from where, and how the stream behaves."""

    rtype: ResourceType
    namespace: str | None
    labels: Predicate
    fields: Predicate
    resource_version: str | None
    bookmarks: bool
    timeout: float
    send_initial_events: bool = False

    def matches(self, obj: Obj | None) -> bool:
        """Whether one object is visible to this watcher."""
        if obj is None:
            return False
        if self.namespace is not None and obj["metadata"].get("namespace", "") != self.namespace:
            return False
        return self.labels(obj) and self.fields(obj)


def _line(event_type: str, obj: Obj) -> bytes:
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _visible_type(req: WatchRequest, event: Event) -> str | None:
    if event.resource != req.rtype.group_resource:
        return None
    now, before = req.matches(event.obj), req.matches(event.old)
    if event.type == "DELETED":
        return "DELETED" if before or now else None
    if now:
        return "MODIFIED" if before else "ADDED"
    return "DELETED" if before else None


class WatchStream:
    """The iterator behind one watch response."""

    def __init__(
        self, store: Store, req: WatchRequest, encode: Encode, bookmark_interval: float
    ) -> None:
        self._store = store
        self._req = req
        self._encode = encode
        self._interval = bookmark_interval
        self._deadline = time.monotonic() + req.timeout

    def _out(self, obj: Obj) -> Obj:
        return self._encode(in_version(obj, self._req.rtype))

    def _bookmark(self, rv: int, initial_end: bool = False) -> bytes:
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        rtype = self._req.rtype
        return _line(
            "BOOKMARK", {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
        )

    def _initial(self) -> tuple[list[bytes], int]:
        rtype = self._req.rtype
        with self._store.locked():
            items, rv = self._store.snapshot(rtype.group_resource, self._req.namespace)
        lines = [_line("ADDED", self._out(o)) for o in items if self._req.matches(o)]
        if self._req.send_initial_events and self._req.bookmarks:
            lines.append(self._bookmark(rv, initial_end=True))
        return lines, rv

    def __iter__(self) -> Iterator[bytes]:
        # The real API server answers a watch with its status line and headers at once, before
        # any event (chunked streaming starts immediately); an empty first chunk makes the WSGI
        # server send them now, so a client can see the watch is open and cut it if it must.
        yield b""
        rv_text = self._req.resource_version
        if self._req.send_initial_events or rv_text in (None, "", "0"):
            lines, cursor = self._initial()
            yield from lines
        else:
            cursor = int(rv_text or 0)
        yield from self._follow(cursor)

    def _follow(self, cursor: int) -> Iterator[bytes]:
        follower = self._store.follow(self._req.rtype.group_resource, self._req.namespace)
        try:
            yield from self._live(follower, cursor)
        finally:
            follower.close()

    def _live(self, follower: Follower, cursor: int) -> Iterator[bytes]:
        next_bookmark = time.monotonic() + self._interval
        while not self._store.closed:
            try:
                events, latest = follower.events_after(cursor)
            except ApiError as exc:
                yield _line("ERROR", exc.status_body())
                return
            for event in events:
                kind = _visible_type(self._req, event)
                if kind is not None:
                    yield _line(kind, self._out(event.obj))
            cursor = max(cursor, latest)
            now = time.monotonic()
            if now >= self._deadline:
                return
            if self._req.bookmarks and now >= next_bookmark:
                yield self._bookmark(cursor)
                next_bookmark = now + self._interval
            wake = min(self._deadline, next_bookmark if self._req.bookmarks else self._deadline)
            follower.wait_past(cursor, max(wake - now, 0.0))
