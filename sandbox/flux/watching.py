"""List-then-watch of one kind, feeding a controller double's event handler.

Shared by the Flux doubles and the Argo CD double (``sandbox.argocd``): anything with a
``list_call(kind)`` (``Lister``) can be watched.

As an informer does: list (every listed object goes through the handler, objects gone from
the list are forgotten), then watch from the list's ``resourceVersion``; on ``410 Gone``, a
dropped stream or the server-side watch timeout, list again. The thread ends on ``stop()``,
which also shuts the open stream's socket (``kubernetes.watch.Watch.stop``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

from kubernetes import watch
from kubernetes.client.exceptions import ApiException

logger = logging.getLogger(__name__)

GONE = 410  # the watch's resourceVersion was compacted away: list again
WATCH_TIMEOUT_S = 60  # server-side timeout of one watch request; a relist follows
ERROR_RETRY_S = 1.0  # wait after a failed list or watch before trying again
STOP_ATTEMPTS = 20  # stop() re-sends the socket shutdown this often while the thread lingers
STOP_JOIN_S = 0.1  # how long each attempt waits for the thread to end

Resync = Callable[[str], str]  # (kind) -> resourceVersion of a fresh list fed to the handler
Handle = Callable[[str, dict[str, Any]], None]  # (event type, raw object)


class Lister(Protocol):
    """What a watch needs from a controller's API door."""

    def list_call(self, kind: str) -> tuple[Callable[..., Any], tuple[str, ...]]:
        """The list function and its positional arguments for ``kind``."""
        ...


class KindWatcher:
    """A background list+watch loop for one kind."""

    def __init__(self, kind: str, api: Lister, resync: Resync, handle: Handle) -> None:
        self._kind = kind
        self._api = api
        self._resync = resync
        self._handle = handle
        self._stopping = threading.Event()
        self._watch: watch.Watch | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"watch-{kind}", daemon=True)

    def start(self) -> None:
        """Begin listing and watching in the background."""
        self._thread.start()

    def stopping(self) -> None:
        """Say the end is coming: a stream the API server closes from now on is expected, so it
        is not logged as a failure (the sandbox stops the server before its controllers)."""
        self._stopping.set()

    def stop(self) -> None:
        """End the loop and the open stream; returns once the thread has ended (or given up)."""
        self._stopping.set()
        for _ in range(STOP_ATTEMPTS):
            with self._lock:
                current = self._watch
            if current is not None:
                current.stop()  # type: ignore[no-untyped-call]
            self._thread.join(STOP_JOIN_S)
            if not self._thread.is_alive():
                return
        logger.warning("watch of %s did not end; leaving the daemon thread", self._kind)

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._stream(self._resync(self._kind))
            except ApiException as err:
                if err.status != GONE:
                    self._failed()
            except Exception:  # the outermost loop of the thread: log, back off, list again
                self._failed()

    def _failed(self) -> None:
        if not self._stopping.is_set():
            logger.exception("list/watch of %s failed; retrying", self._kind)
            self._stopping.wait(ERROR_RETRY_S)

    def _stream(self, resource_version: str) -> None:
        listing, args = self._api.list_call(self._kind)
        current = watch.Watch()  # type: ignore[no-untyped-call]
        with self._lock:
            self._watch = current
        if self._stopping.is_set():
            return
        for event in current.stream(  # type: ignore[no-untyped-call]
            listing,
            *args,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_S,
        ):
            if self._stopping.is_set():
                return
            if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                self._handle(event["type"], event["raw_object"])
