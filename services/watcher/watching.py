"""One watch: finite, resumable sessions inside a trivial reconnect loop (M1, M9).

A session resumes from the cursor in Redis with a watch; without a cursor, or after ``410
Gone``, it lists first, publishes every listed object it has not already published at the same
resourceVersion (an unchanged object would be no write, M3), sweeps what vanished (only under
``prune.mode: Always``; the sweep DELETEs pass the rule's operations filter like any other),
and watches from the list's resourceVersion. A list made without a cursor has nothing to
sweep against, so it may also publish the names it found (a ``Listing``, D2): the branch worker
deletes the folder's documents of that type and namespace that the cluster no longer has. Under
``Always`` every such list does; under ``OnEvent`` only one made after Redis lost the cursor
this watch held (M9: those deletes happened, their events were lost). Every event is
published before the cursor moves past it (at-least-once). The loop around sessions only
restarts them, with backoff on errors. Observed DELETEs are published in every prune mode: the
branch worker applies ``Never`` (keeps the file) and still learns that, say, a refused Secret
is gone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.watcher.emit import (
    known_object,
    listed_operation,
    listing_of,
    name_of,
    object_event,
    operation_of,
    swept_event,
)
from services.watcher.encryption import Sealer
from services.watcher.metrics import WatcherMetrics
from shared.decide.watches import WatchSpec
from shared.kube.api import KubeClient, StreamHandle, WatchEvent
from shared.kube.errors import Expired, KubeError
from shared.kube.kinds import is_sensitive
from shared.model.events import ObjectEvent, Operation
from shared.store.streams import EventStream
from shared.store.watches import KnownObject, WatchAddress, WatchState

logger = logging.getLogger(__name__)

#: Longest wait between attempts of a failing watch.
MAX_BACKOFF_S = 60.0
#: A burst watch gives up after this many failed sessions in a row.
BURST_ATTEMPTS = 3
#: A burst watch is drained once its stream stayed this quiet to the end of a session.
BURST_QUIET_S = 0.5
#: Events of a relist published per Redis round trip.
PUBLISH_CHUNK = 500
#: Objects asked for per list request (``limit``; client-go's pager asks for 500 too): the
#: watcher holds one chunk of a large list at a time, not the whole answer.
LIST_CHUNK = 500
#: Lists started again after a chunk's continue token expired (410) before the watch gives
#: up this session (its reconnect loop lists again).
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


class WatchWorker:
    """A thread that keeps one watch running until stopped."""

    def __init__(self, spec: WatchSpec, client: KubeClient, deps: WatchDeps) -> None:
        self.spec = spec
        self._client = client
        self._deps = deps
        self._at = WatchAddress(spec.key.uid, spec.key.group_resource, spec.key.namespace)
        self._stopping = threading.Event()
        #: Held while a unit of work (one event, or one relist) is published and recorded.
        self._unit = threading.Lock()
        self._handle: StreamHandle | None = None
        self._relist_cause = ""
        self._had_cursor = False  # this watch has held a cursor in this process (D2)
        name = f"watch {spec.key.namespace}/{spec.key.group_resource}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish the event in hand and end (an open stream is cut)."""
        self._stopping.set()
        handle = self._handle
        if handle is not None:
            handle.stop()

    def quiesce(self, timeout: float) -> bool:
        """After ``stop``: wait until no unit of work is in hand; True when none is.

        A stopped worker starts no new unit, so once this returns True the worker will never
        publish or move its cursor again, even if its thread is still blocked on a socket.
        """
        if not self._unit.acquire(timeout=timeout):
            return False
        self._unit.release()
        return True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it has ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _log(self) -> dict[str, str]:
        target = self.spec.target
        return {"gittarget": f"{target.namespace}/{target.name}", "branch": self.spec.branch}

    def _run(self) -> None:
        """The reconnect loop: the outermost loop of this thread."""
        failures = 0
        while not self._stopping.is_set():
            try:
                idle = self._session()
                failures = 0
                if self._deps.burst and idle:
                    return
            except Expired:
                self._relist_cause = "expired"
                self._deps.metrics.restarts.labels("expired").inc()
            except KubeError as err:
                failures += 1
                self._deps.metrics.restarts.labels(type(err).__name__).inc()
                if self._stopping.is_set() or not self._backoff(failures, err):
                    return
            except Exception:  # outermost loop of the thread: log, back off, go on
                failures += 1
                logger.exception("watch failed", extra=self._log())
                if not self._backoff(failures, None):
                    return

    def _backoff(self, failures: int, err: KubeError | None) -> bool:
        """Wait before the next attempt; False when the watch should give up."""
        if err is not None:
            logger.warning("watch %s: %s", self._at.group_resource, err, extra=self._log())
        if self._deps.burst and failures >= BURST_ATTEMPTS:
            return False
        delay = min(MAX_BACKOFF_S, 0.5 * 2 ** (failures - 1))
        return not self._stopping.wait(delay)

    def _session(self) -> bool:
        """List if needed, then watch until the stream ends; True when it ended quiet."""
        cursor = None if self._relist_cause else self._deps.state.cursor(self._at)
        if cursor is None:
            # A cursor this watch held before (in this process, or before it started: its
            # WatchRule was Ready already) and Redis no longer has: its data was lost (D2).
            held = self._had_cursor or self.spec.mirrored_before
            lost = "lostcursor" if held else "nocursor"
            cursor = self._relist(self._relist_cause or lost)
            if cursor is None:
                return False
        self._had_cursor = True
        last_event = self._follow(cursor)
        return self._deps.monotonic() - last_event >= BURST_QUIET_S

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
        with self._unit:
            if self._stopping.is_set():
                return None
            return self._relist_unit(cause)

    def _relist_unit(self, cause: str) -> str | None:
        logger.info("listing %s (%s)", self._at.group_resource, cause, extra=self._log())
        self._deps.metrics.relists.labels(cause).inc()
        known = self._deps.state.known(self._at)
        for attempt in range(1, CONTINUE_ATTEMPTS + 1):
            try:
                listed = self._list_chunks(known)
                break
            except Expired as err:
                # a chunk's continue token expired (its snapshot was compacted): what was
                # published stays published; list again from the start, a new snapshot
                if attempt == CONTINUE_ATTEMPTS:  # backed off, the same cause kept (D2)
                    raise KubeError(f"the list expired midway {attempt} times: {err}") from err
                logger.info("list of %s expired midway; listing again", self._at.group_resource)
                self._deps.metrics.relists.labels("continue-expired").inc()
        if listed is None:
            return None
        present, version = listed
        if cause in ("nocursor", "lostcursor"):
            self._publish_listing(present, lost=cause == "lostcursor")
        self._sweep(known, present, version)
        self._deps.state.replace(self._at, version, present)
        self._relist_cause = ""
        return version

    def _list_chunks(
        self, known: dict[str, KnownObject]
    ) -> tuple[dict[str, KnownObject], str] | None:
        """List in chunks of ``LIST_CHUNK`` (so the watcher never holds a whole large list),
        publishing each object the list shows changed; returns what is present and the list's
        resourceVersion (None when stopped midway)."""
        present: dict[str, KnownObject] = {}
        chunk: list[tuple[Operation, ObjectEvent]] = []
        version = ""
        pages = self._client.pages(self.spec.resource, self.spec.key.namespace, LIST_CHUNK)
        for page in pages:
            version = page.resource_version
            for obj in page.items:
                if self._stopping.is_set():
                    return None  # the cursor has not moved: the next session lists again
                name, seen = name_of(obj), known_object(self.spec, obj)
                operation = listed_operation(obj, name in known)
                if operation != "DELETE":
                    present[name] = seen
                    if seen.same_revision(known.get(name)):
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
        watch's first list (a document the cluster lacks is not a delete anyone observed)."""
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

    def _follow(self, cursor: str) -> float:
        """Watch from ``cursor``; returns when the last object event (or the start) was."""
        handle = self._handle = StreamHandle()
        last = self._deps.monotonic()
        if self._stopping.is_set():
            return last
        stream = self._client.watch(
            self.spec.resource, self.spec.key.namespace, cursor, self._deps.session_s, handle
        )
        for event in stream:
            if self._on_event(event):
                last = self._deps.monotonic()
            if self._stopping.is_set():
                break
        return last

    def _on_event(self, event: WatchEvent) -> int:
        """Publish one event, then move the cursor past it; returns 1 for an object event.

        A stopped worker drops the event unrecorded: its cursor stays before it, so the next
        start delivers it again.
        """
        with self._unit:
            if self._stopping.is_set():
                return 0
            return self._record(event)

    def _record(self, event: WatchEvent) -> int:
        if event.type == "BOOKMARK":
            self._deps.state.advance(self._at, event.resource_version)
            return 0
        operation = operation_of(event.type, event.object)
        if operation is None:
            return 0
        obj = event.object
        published = object_event(self.spec, operation, obj, self._deps.clock(), self._deps.sealer)
        self._publish(operation, published)
        name = name_of(obj)
        if operation == "DELETE":
            self._deps.state.advance(self._at, event.resource_version, gone=[name])
        else:
            seen = {name: known_object(self.spec, obj)}
            self._deps.state.advance(self._at, event.resource_version, seen=seen)
        return 1
