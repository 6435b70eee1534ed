"""One watch's logic: what one (GitTarget, type, namespace) publishes and where it resumes (M1, M9).

A ``Channel`` holds no thread and opens no stream: whoever feeds it (a shared watch of its type,
``services.watcher.sharing``, or a watch of its own namespace, ``services.watcher.watching``)
asks it where to start and hands it the stream's events one at a time.

Its start resumes from the cursor in Redis; without a cursor, or after ``410 Gone``, it lists
its namespace first, publishes every listed object it has not already published at the same
resourceVersion (an unchanged object would be no write, M3), sweeps what vanished (only under
``prune.mode: Always``; the sweep DELETEs pass the rule's operations filter like any other),
and starts from the list's resourceVersion. A list made without a cursor has nothing to
sweep against, so it may also publish the names it found (a ``Listing``, D2): the branch worker
deletes the folder's documents of that type and namespace that the cluster no longer has. Under
``Always`` every such list does; under ``OnEvent`` only one made after Redis lost the cursor
this watch held (M9: those deletes happened, their events were lost). A watch with
``objectSelector``s (issue 27) publishes only the objects they select: one that stops matching
is published as a DELETE (when the watch had published it), one that starts matching as the
change it came with; a watch whose selectors differ from those its seen set was listed under
lists again (cause ``selector``), so a changed selector adds what it now selects and removes
what it no longer does. Every event is published before the cursor moves past it
(at-least-once). Observed DELETEs are published in every prune mode: the branch worker applies
``Never`` (keeps the file) and still learns that, say, a refused Secret is gone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from services.watcher.emit import (
    known_object,
    listed_operation,
    listing_of,
    name_of,
    newest_of,
    object_event,
    operation_of,
    swept_event,
)
from services.watcher.encryption import Sealer
from services.watcher.metrics import WatcherMetrics
from shared.decide.apply_window import Newest, writers_of
from shared.decide.selectors import selection_key, selects
from shared.decide.watches import WatchSpec
from shared.kube.api import KubeClient, WatchEvent
from shared.kube.errors import Expired, KubeError
from shared.kube.kinds import is_sensitive
from shared.model.events import ObjectEvent, Operation
from shared.store.streams import EventStream
from shared.store.watches import KnownObject, WatchAddress, WatchState

logger = logging.getLogger(__name__)

#: Events of a relist published per Redis round trip.
PUBLISH_CHUNK = 500
#: Objects asked for per list request (``limit``; client-go's pager asks for 500 too): the
#: watcher holds one chunk of a large list at a time, not the whole answer.
LIST_CHUNK = 500
#: The relist cause of a reconcile request (P8): every object is published, and the names
#: found (a ``Listing``), so the folder is made again from the cluster.
RESYNC = "reconcile"
#: Lists started again after a chunk's continue token expired (410) before the watch gives
#: up this start (whoever feeds it tries again).
CONTINUE_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class WatchDeps:
    """What every watch shares: Redis, metrics, the clock, and how long a session lasts."""

    events: EventStream
    state: WatchState
    metrics: WatcherMetrics
    clock: Callable[[], float]
    session_s: int  # timeoutSeconds of each watch request
    burst: bool = False  # end once a session ends quiet (tests, --burst)
    monotonic: Callable[[], float] = time.monotonic  # measures quiet, never business time
    sealer: Sealer | None = None  # seals the Secrets of encrypting GitTargets (P3)


class Channel:
    """One watch's cursor, seen objects and publishing, fed by a stream someone else reads."""

    def __init__(self, spec: WatchSpec, client: KubeClient, deps: WatchDeps) -> None:
        self.spec = spec
        self.client = client
        self._deps = deps
        self.at = WatchAddress(spec.key.uid, spec.key.group_resource, spec.key.namespace)
        self._stopping = threading.Event()
        #: Held while a unit of work (one event, one relist, one cursor write) is in hand.
        self.unit = threading.Lock()
        self._relist_cause = ""
        self._selection = selection_key(spec.selectors)  # issue 27
        self._had_cursor = False  # this watch has held a cursor in this process (D2)
        #: W2: each object's newest managedFields entries as this watch last delivered them
        #: (a list's or an event's), so the next event's writers are known by the watch's
        #: order (``writers_of``); lost with the process (an event then has none).
        self._newest: dict[str, Newest] = {}

    @property
    def deps(self) -> WatchDeps:
        """What every watch shares."""
        return self._deps

    def wait_stopped(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for ``stop``; True when stopped."""
        return self._stopping.wait(seconds)

    @property
    def stopping(self) -> bool:
        """Whether the channel was stopped (it starts no new unit of work)."""
        return self._stopping.is_set()

    def stop(self) -> None:
        """Start no new unit of work; the one in hand is finished."""
        self._stopping.set()

    def quiesce(self, timeout: float) -> bool:
        """After ``stop``: wait until no unit of work is in hand; True when none is.

        A stopped channel starts no new unit, so once this returns True it will never publish
        or move its cursor again, even if whoever feeds it is still blocked on a socket.
        """
        if not self.unit.acquire(timeout=timeout):
            return False
        self.unit.release()
        return True

    def log_extra(self) -> dict[str, str]:
        """The GitTarget and branch, for log records."""
        target = self.spec.target
        return {"gittarget": f"{target.namespace}/{target.name}", "branch": self.spec.branch}

    def expired(self) -> None:
        """The stream said 410 Gone for this channel's cursor: the next start lists again."""
        self._relist_cause = "expired"
        self._deps.metrics.restarts.labels("expired").inc()

    def start_point(self) -> str | None:
        """The resourceVersion to follow from: the cursor, or a fresh list's (None when
        stopped midway). Raises ``KubeError`` when the list fails."""
        stored = self._deps.state.cursor(self.at)
        cursor = None if self._relist_cause else stored
        if cursor is not None and self._deps.state.selection(self.at) != self._selection:
            self._relist_cause, cursor = "selector", None  # listed under other selectors
        if self.spec.resync and self._deps.state.resynced(self.at) != self.spec.resync:
            self._relist_cause, cursor = RESYNC, None  # P8: a request this watch has not handled
        if cursor is None:
            # A cursor this watch held before (in this process, or before it started: its
            # WatchRule was Ready already) and Redis no longer has: its data was lost (D2).
            held = self._had_cursor or self.spec.mirrored_before
            lost = "lostcursor" if held else "nocursor"
            cursor = self._relist(self._relist_cause or lost)
            if cursor is None:
                return None
        self._had_cursor = True
        return cursor

    def _selected(self, obj: dict[str, object]) -> bool:
        """Whether the watch's objectSelectors select ``obj`` (issue 27)."""
        meta = obj.get("metadata")
        labels = meta.get("labels") if isinstance(meta, dict) else None
        return selects(self.spec.selectors, labels if isinstance(labels, dict) else {})

    def _unselected(self, event: WatchEvent) -> int:
        """An event of an object no selector matches: a DELETE if the watch published it (its
        labels stopped matching, or it was deleted since), else only the cursor moves."""
        name = name_of(event.object)
        if not self._deps.state.knows(self.at, name):
            self._deps.state.advance(self.at, event.resource_version)
            return 1
        gone = object_event(self.spec, "DELETE", event.object, self._deps.clock())
        self._publish("DELETE", gone)
        self._deps.state.advance(self.at, event.resource_version, gone=[name])
        return 1

    def _publish(self, operation: Operation, event: ObjectEvent) -> None:
        if operation in self.spec.operations:
            self._deps.events.publish(self.spec.branch, event)
            self._deps.metrics.events.labels(operation).inc()

    def _publish_chunk(self, chunk: list[tuple[Operation, ObjectEvent]]) -> None:
        """Publish a relist's events in order, one round trip for the lot."""
        wanted = [(op, event) for op, event in chunk if op in self.spec.operations]
        self._deps.events.publish_many(self.spec.branch, [event for _, event in wanted])
        for operation, _ in wanted:
            self._deps.metrics.events.labels(operation).inc()
        chunk.clear()

    def _relist(self, cause: str) -> str | None:
        """List, publish every object, sweep; returns the cursor (None when stopped midway)."""
        with self.unit:
            if self.stopping:
                return None
            return self._relist_unit(cause)

    def _relist_unit(self, cause: str) -> str | None:
        logger.info("listing %s (%s)", self.at.group_resource, cause, extra=self.log_extra())
        self._deps.metrics.relists.labels(cause).inc()
        known = self._deps.state.known(self.at)
        for attempt in range(1, CONTINUE_ATTEMPTS + 1):
            try:
                remaining = dict(known)  # less what stopped matching a selector (published)
                listed = self._list_chunks(remaining, full=cause == RESYNC)
                break
            except Expired as err:
                # a chunk's continue token expired (its snapshot was compacted): what was
                # published stays published; list again from the start, a new snapshot
                if attempt == CONTINUE_ATTEMPTS:  # backed off, the same cause kept (D2)
                    raise KubeError(f"the list expired midway {attempt} times: {err}") from err
                logger.info("list of %s expired midway; listing again", self.at.group_resource)
                self._deps.metrics.relists.labels("continue-expired").inc()
        if listed is None:
            return None
        present, version = listed
        if cause in ("nocursor", "lostcursor", RESYNC):
            self._publish_listing(present, lost=cause != "nocursor")
        self._sweep(remaining, present, version)
        self._deps.state.replace(self.at, version, present, self._selection)
        if cause == RESYNC:
            self._deps.state.mark_resynced(self.at, self.spec.resync)
        self._relist_cause = ""
        return version

    def _list_chunks(
        self, known: dict[str, KnownObject], *, full: bool = False
    ) -> tuple[dict[str, KnownObject], str] | None:
        """List in chunks of ``LIST_CHUNK`` (so the watcher never holds a whole large list),
        publishing each object the list shows changed (every object when ``full``: a resync,
        P8, rewrites a file deleted by hand); returns what is present and the list's
        resourceVersion (None when stopped midway)."""
        present: dict[str, KnownObject] = {}
        chunk: list[tuple[Operation, ObjectEvent]] = []
        version = ""
        pages = self.client.pages(self.spec.resource, self.spec.key.namespace, LIST_CHUNK)
        for page in pages:
            version = page.resource_version
            for obj in page.items:
                if self.stopping:
                    return None  # the cursor has not moved: the next start lists again
                name, seen = name_of(obj), known_object(self.spec, obj)
                if not self._selected(obj):
                    if known.pop(name, None) is not None:  # it stopped matching: a delete
                        event = object_event(self.spec, "DELETE", obj, self._deps.clock())
                        chunk.append(("DELETE", event))
                    continue
                self._remember_newest(name, newest_of(obj))  # the state the watch goes on from
                operation = listed_operation(obj, name in known)
                if operation != "DELETE":
                    present[name] = seen
                    if not full and seen.same_revision(known.get(name)):
                        continue  # published before at this very revision: no write (M3)
                clock, sealer = self._deps.clock(), self._deps.sealer
                chunk.append((operation, object_event(self.spec, operation, obj, clock, sealer)))
                if len(chunk) >= PUBLISH_CHUNK:
                    self._publish_chunk(chunk)
        self._publish_chunk(chunk)
        return present, version

    def _publish_listing(self, present: dict[str, KnownObject], *, lost: bool) -> None:
        """D2: a watch without a cursor cannot tell which objects vanished; the names it listed
        let the branch worker find them in the folder. M9: under ``Always`` every such list
        removes what the cluster lacks; under ``OnEvent`` only a list after Redis lost this
        watch's cursor does (the deletes happened and their events were lost), never a new
        watch's first list (a document the cluster lacks is not a delete anyone observed).
        P8: a reconcile request is a person asking to look at the cluster now, so its list
        removes what the cluster lacks under ``OnEvent`` too (``Never`` keeps it)."""
        if self.spec.prune == "Never" or "DELETE" not in self.spec.operations:
            return
        if self.spec.prune == "OnEvent" and not lost:
            return
        if is_sensitive(self.spec.resource) and not self.spec.recipients:
            return  # never written, so nothing to find in the folder (sealed ones are, P3)
        self._deps.events.publish(
            self.spec.branch, listing_of(self.spec, present, self._deps.clock())
        )
        self._deps.metrics.events.labels("LISTED").inc()

    def _sweep(
        self, known: dict[str, KnownObject], present: dict[str, KnownObject], version: str
    ) -> None:
        if self.spec.prune != "Always":
            return
        for name in sorted(set(known) - set(present)):
            event = swept_event(self.spec, name, known[name], version, self._deps.clock())
            self._publish("DELETE", event)

    def on_event(self, event: WatchEvent) -> int:
        """Publish one event, then move the cursor past it; returns 1 for an object event.

        A stopped channel drops the event unrecorded: its cursor stays before it, so the next
        start delivers it again.
        """
        with self.unit:
            if self.stopping:
                return 0
            return self._record(event)

    def _record(self, event: WatchEvent) -> int:
        if event.type == "BOOKMARK":
            self._deps.state.advance(self.at, event.resource_version)
            return 0
        operation = operation_of(event.type, event.object)
        if operation is None:
            return 0
        obj = event.object
        if not self._selected(obj):
            return self._unselected(event)
        published = object_event(self.spec, operation, obj, self._deps.clock(), self._deps.sealer)
        name = name_of(obj)
        published = self._with_writers(name, operation, published, newest_of(obj))
        self._publish(operation, published)
        if operation == "DELETE":
            self._deps.state.advance(self.at, event.resource_version, gone=[name])
        else:
            seen = {name: known_object(self.spec, obj)}
            self._deps.state.advance(self.at, event.resource_version, seen=seen)
        return 1

    def _with_writers(
        self, name: str, operation: Operation, event: ObjectEvent, newest: Newest | None
    ) -> ObjectEvent:
        """W2: ``event`` with the managers that made its write, when the watch's order says
        (the write before it, as this watch delivered it, and this one)."""
        writers = writers_of(self._newest.get(name), newest)
        self._remember_newest(name, None if operation == "DELETE" else newest)
        return event if writers is None else replace(event, writers=tuple(sorted(writers)))

    def _remember_newest(self, name: str, newest: Newest | None) -> None:
        if newest is None:
            self._newest.pop(name, None)
        else:
            self._newest[name] = newest
