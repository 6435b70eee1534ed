"""When the dispatcher stamps a Flux object (a watch on its ``requestedAt`` annotation), or sets
an Argo CD Application's ``operation`` (a watch on the token the operation carries).

The apply-trigger benchmark measures up to the moment a request reaches Flux, which is the
moment the dispatcher writes a new ``reconcile.fluxcd.io/requestedAt`` value on the
GitRepository (../shared/facts/appliers.md F1: the token is any new string; Flux acts on a
change of value). Polling the object would load the API server the product shares and add
the poll interval to every sample, so the change is taken from a watch instead, as Flux's own
controllers see it: a background list+watch records the time each new value arrives, and the
benchmark blocks on a condition until the value differs from the one it knew.

An Application's ``operation`` is set by the product with its request's token in ``info``
(../shared/facts/appliers.md A2, D5) and cleared by Argo CD once the sync ends; ``operation_token``
reads that token, and a watch keeps the last token it saw (an object without one changes
nothing), so a new operation is a new value as a new Flux stamp is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
#: The ``operation.info`` entry naming the request's token (shared/appliers/argocd.py).
TOKEN_INFO = "gitops-reverser/token"
#: Server-side timeout of one watch request: the thread looks at its stop flag this often.
WATCH_TIMEOUT_S = 1
#: Wait before listing again after the API server failed a list or a watch.
RETRY_S = 0.2
STOP_JOIN_S = 5.0


def requested_at(obj: dict[str, Any]) -> str | None:
    """A Flux object's ``reconcile.fluxcd.io/requestedAt`` value."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(REQUESTED_AT)
    return str(value) if value is not None else None


def operation_token(obj: dict[str, Any]) -> str | None:
    """The token of the operation set on an Application, if one is set."""
    for info in (obj.get("operation") or {}).get("info") or []:
        if info.get("name") == TOKEN_INFO:
            return str(info.get("value"))
    return None


@dataclass(frozen=True, slots=True)
class Stamp:
    """One value of the annotation and when this process saw it (``time.time()``)."""

    value: str | None
    seen_at: float


@dataclass(frozen=True, slots=True)
class Target:
    """The watched object: a namespaced custom resource, by name."""

    group: str
    version: str
    namespace: str
    plural: str
    name: str


class StampWatch:
    """Follows one value of one object (``read``: by default Flux's ``requestedAt``) from a
    background thread."""

    def __init__(
        self,
        api: client.ApiClient,
        target: Target,
        read: Callable[[dict[str, Any]], str | None] = requested_at,
    ) -> None:
        self._custom = client.CustomObjectsApi(api)
        self._target = target
        self._read = read
        self._cond = threading.Condition()
        self._latest = Stamp(None, 0.0)
        self._stopping = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stamp-watch", daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        """Start watching; returns once the first list has been read."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("bench: could not list the watched object")

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(STOP_JOIN_S)

    def latest(self) -> Stamp:
        with self._cond:
            return self._latest

    def wait_change(self, since: str | None, timeout: float) -> Stamp:
        """The first value other than ``since``, blocking until it arrives (bounded)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._latest.value != since, timeout):
                raise RuntimeError(f"bench: no new stamp on {self._target.name} within {timeout}s")
            return self._latest

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._follow(self._list())
            except (ApiException, HTTPError, OSError):
                # the outermost loop of this thread: list again, as an informer does
                self._stopping.wait(RETRY_S)

    def _list(self) -> str:
        t = self._target
        found: Any = self._custom.list_namespaced_custom_object(
            t.group, t.version, t.namespace, t.plural
        )
        for item in found.get("items", []):
            self._see(item)
        self._ready.set()
        return str(found["metadata"]["resourceVersion"])

    def _follow(self, resource_version: str) -> None:
        t, stream = self._target, watch.Watch()  # type: ignore[no-untyped-call]
        while not self._stopping.is_set():
            events = stream.stream(  # type: ignore[no-untyped-call]
                self._custom.list_namespaced_custom_object,
                t.group,
                t.version,
                t.namespace,
                t.plural,
                resource_version=resource_version,
                timeout_seconds=WATCH_TIMEOUT_S,
            )
            for event in events:
                self._see(event["object"])
            resource_version = stream.resource_version or resource_version

    def _see(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        if meta.get("name") != self._target.name:
            return
        value = self._read(obj)
        with self._cond:
            if value is not None and value != self._latest.value:
                self._latest = Stamp(value, time.time())
                self._cond.notify_all()


@contextmanager
def watching(
    api: client.ApiClient,
    target: Target,
    read: Callable[[dict[str, Any]], str | None] = requested_at,
) -> Iterator[StampWatch]:
    """A started StampWatch, stopped afterwards."""
    stamps = StampWatch(api, target, read)
    stamps.start()
    try:
        yield stamps
    finally:
        stamps.stop()
