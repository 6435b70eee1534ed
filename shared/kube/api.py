"""One cluster's API as raw JSON: get, list, watch, create, update, and merge-patch of status.

The product reads and writes objects as plain dicts (``shared.model`` parses what it needs),
so every call goes through the official client's ``DynamicClient`` request path, which
builds the URL, authenticates, and raises ``ApiException`` with the server's Status. Types
are resolved by our own discovery (``shared.kube.discovery``), not by the dynamic client's,
which would keep a cache file per host in the temp directory. Every failure leaves this
module as a ``shared.kube.errors`` error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes.client import ApiClient
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.resource import Resource
from kubernetes.watch import Watch

from shared.kube.errors import translated
from shared.kube.kinds import SELF_SUBJECT_ACCESS_REVIEWS
from shared.model.resources import ApiResource

Obj = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
#: Seconds to wait for a connection; a cluster that does not answer this fast is down.
CONNECT_TIMEOUT_S = 10.0
#: Plain requests (not watches) that take longer than this have hung.
REQUEST_TIMEOUT_S = 30.0
#: A watch's read timeout beyond its ``timeoutSeconds``: the server ends the stream itself,
#: so a socket silent for longer than this is dead.
WATCH_GRACE_S = 30.0


class _NoDiscovery:
    """Stands in for DynamicClient's discoverer, which would read and write a cache file."""

    def __init__(self, client: DynamicClient, cache_file: str | None) -> None:
        self.client = client


@dataclass(frozen=True, slots=True)
class ObjectList:
    """A list response: the items and the resourceVersion to watch from."""

    items: list[Obj]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ADDED, MODIFIED, DELETED or BOOKMARK, with the raw object."""

    type: str
    object: Obj

    @property
    def resource_version(self) -> str:
        """The object's (or the bookmark's) resourceVersion."""
        return str(self.object.get("metadata", {}).get("resourceVersion", ""))


class StreamHandle:
    """Lets another thread cut an open watch stream (one handle per watch request).

    ``stop`` may come at any moment: before the request is sent, while its response is on the
    way, or while the stream is read. The response is recorded under a lock as soon as it
    arrives (``opened``), so a stop that came first cuts it there and a stop that comes after
    shuts its socket down; the official client's own ``Watch.stop`` misses the first case (its
    ``stream`` clears the flag as it starts)."""

    def __init__(self) -> None:
        self.watch = Watch()  # type: ignore[no-untyped-call]
        self.stopped = False
        self._lock = threading.Lock()
        self._response: Any = None

    def stop(self) -> None:
        """End the stream: its socket is shut down, and the iteration stops."""
        with self._lock:
            self.stopped = True
            response = self._response
        self.watch.stop()  # type: ignore[no-untyped-call]
        if response is not None:
            _shut_down(response)

    def opened(self, response: Any) -> Any:
        """The watch request's response has arrived; cut at once if stopped meanwhile."""
        with self._lock:
            self._response = response
            stopped = self.stopped
        if stopped:
            _shut_down(response)
        return response


def _shut_down(response: Any) -> None:
    """Shut a streaming response's socket down for reading, so a read blocked on it returns
    at once (urllib3's ``HTTPResponse.shutdown``, 2.3 and later: the connection's own ``sock``
    is already None when the server said ``Connection: close``)."""
    with contextlib.suppress(ValueError, RuntimeError, OSError):
        response.shutdown()


class KubeClient:
    """Raw JSON access to one cluster."""

    def __init__(self, api_client: ApiClient, cluster: str) -> None:
        self.api_client = api_client
        self.cluster = cluster
        self._dynamic = DynamicClient(api_client, discoverer=_NoDiscovery)  # type: ignore[no-untyped-call]

    def _resource(self, res: ApiResource) -> Resource:
        return Resource(  # type: ignore[no-untyped-call]
            prefix="apis" if res.group else "api",
            group=res.group,
            api_version=res.version,
            kind=res.kind,
            namespaced=res.namespaced,
            name=res.resource,
            client=self._dynamic,
        )

    def request(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """One request; returns the decoded JSON answer."""
        with translated(f"{method.upper()} {path} on cluster {self.cluster}"):
            response = self._dynamic.request(
                method,
                path,
                body=body,
                serialize=False,
                _request_timeout=(CONNECT_TIMEOUT_S, REQUEST_TIMEOUT_S),
                **params,
            )
            return json.loads(response.data or b"null")

    def path(self, res: ApiResource, namespace: str = "", name: str = "") -> str:
        """The URL path of a collection or an object."""
        resource = self._resource(res)
        return str(resource.path(name=name or None, namespace=namespace or None))  # type: ignore[no-untyped-call]

    def get(self, res: ApiResource, namespace: str, name: str) -> Obj:
        """One object; NotFound when it does not exist."""
        return dict(self.request("get", self.path(res, namespace, name)))

    def list(self, res: ApiResource, namespace: str = "", label_selector: str = "") -> ObjectList:
        """Every object of a type (in one namespace, or all), with the list's resourceVersion."""
        params = {"label_selector": label_selector} if label_selector else {}
        answer = self.request("get", self.path(res, namespace), **params)
        version = str(answer.get("metadata", {}).get("resourceVersion", ""))
        items = [_with_type(item, res) for item in answer.get("items") or []]
        return ObjectList(items, version)

    def pages(self, res: ApiResource, namespace: str, limit: int) -> Iterator[ObjectList]:
        """Every object of a type in chunks of at most ``limit`` (``limit``/``continue``), one
        consistent snapshot: each chunk carries the first one's resourceVersion. A chunk's
        token that expired meanwhile raises ``Expired``; the caller lists again from the start
        (the chunks it had are of a snapshot that is gone)."""
        token: str | None = None
        while True:
            params: dict[str, Any] = {"limit": limit}
            if token:
                params["_continue"] = token
            answer = self.request("get", self.path(res, namespace), **params)
            meta = answer.get("metadata") or {}
            items = [_with_type(item, res) for item in answer.get("items") or []]
            yield ObjectList(items, str(meta.get("resourceVersion", "")))
            token = meta.get("continue") or None
            if token is None:
                return

    def create(self, res: ApiResource, namespace: str, body: Obj) -> Obj:
        """Create an object."""
        return dict(self.request("post", self.path(res, namespace), body=body))

    def update(self, res: ApiResource, body: Obj, field_manager: str) -> Obj:
        """Replace an object (PUT) as ``field_manager``. The body's
        ``metadata.resourceVersion`` guards it: an object changed since it was read is a 409
        (``Conflict``), to be read again."""
        meta = body.get("metadata") or {}
        path = self.path(res, str(meta.get("namespace", "")), str(meta.get("name", "")))
        return dict(self.request("put", path, body=body, field_manager=field_manager))

    def delete(self, res: ApiResource, namespace: str, name: str, uid: str) -> None:
        """Delete the incarnation ``uid`` of an object (a precondition: one recreated under
        the same name is a 409, ``Conflict``); NotFound when it is gone already."""
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        self.request("delete", self.path(res, namespace, name), body=body)

    def ssar(self, verb: str, group: str, resource: str, namespace: str, name: str = "") -> bool:
        """Whether our identity may ``verb`` the resource (a SelfSubjectAccessReview);
        ``resource`` may name a subresource (``gittargets/status``), sent as its own field."""
        resource, _, subresource = resource.partition("/")
        attributes = {"verb": verb, "group": group, "resource": resource}
        if subresource:
            attributes["subresource"] = subresource
        attributes |= {k: v for k, v in (("namespace", namespace), ("name", name)) if v}
        review = {
            "apiVersion": SELF_SUBJECT_ACCESS_REVIEWS.api_version,
            "kind": SELF_SUBJECT_ACCESS_REVIEWS.kind,
            "spec": {"resourceAttributes": attributes},
        }
        answer = self.create(SELF_SUBJECT_ACCESS_REVIEWS, "", review)
        return bool((answer.get("status") or {}).get("allowed"))

    def patch(self, res: ApiResource, namespace: str, name: str, patch: Obj) -> Obj:
        """A JSON merge patch of an object (its spec or metadata; ``null`` removes a field)."""
        path = self.path(res, namespace, name)
        return dict(self.request("patch", path, body=patch, content_type=MERGE_PATCH))

    def patch_status(self, res: ApiResource, namespace: str, name: str, patch: Obj) -> Obj:
        """A JSON merge patch of the ``/status`` subresource."""
        path = self.path(res, namespace, name) + "/status"
        return dict(self.request("patch", path, body=patch, content_type=MERGE_PATCH))

    def watch(
        self,
        res: ApiResource,
        namespace: str,
        resource_version: str,
        timeout_s: int,
        handle: StreamHandle,
    ) -> Iterator[WatchEvent]:
        """Events after ``resource_version`` until the server ends the stream (``timeout_s``).

        Bookmarks are asked for; a 410 (as a status or an ERROR event) raises ``Expired``.
        ``handle.stop()`` from another thread ends the stream early.
        """
        if handle.stopped:
            return
        with translated(f"watch {res.group_resource} in {namespace or 'all'}"):
            get = self._resource(res).get

            @functools.wraps(get)  # the official client reads its signature and docstring
            def request(*args: Any, **kwargs: Any) -> Any:
                return handle.opened(get(*args, **kwargs))

            stream = handle.watch.stream(  # type: ignore[no-untyped-call]
                request,
                namespace=namespace or None,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_s,
                serialize=False,
                _request_timeout=(CONNECT_TIMEOUT_S, timeout_s + WATCH_GRACE_S),
            )
            for event in stream:
                if handle.stopped:
                    return
                raw = event.get("raw_object") if isinstance(event, dict) else None
                if isinstance(raw, dict):
                    yield WatchEvent(str(event.get("type", "")), _with_type(raw, res))

    def close(self) -> None:
        """Release the client's connections."""
        self.api_client.close()  # type: ignore[no-untyped-call]
        self.api_client.rest_client.pool_manager.clear()


def _with_type(obj: Obj, res: ApiResource) -> Obj:
    """List items carry no apiVersion/kind on a real server: fill them in."""
    obj.setdefault("apiVersion", res.api_version)
    obj.setdefault("kind", res.kind)
    return obj
