"""Resource request handlers: one method per verb, thin over the store and the writer.

Reads answer in the requested version (CRD conversion strategy None), lists carry the
collection's resourceVersion (items of built-in lists carry no kind/apiVersion, as typed
lists are encoded; custom resource items keep theirs), ``as=Table`` is honoured for get,
list and watch. Writes take their manager from ``fieldManager`` or the User-Agent
(handlers/rest.go ``managerOrUserAgent``) and answer with Warning headers for unknown fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from werkzeug.datastructures import Headers
from werkzeug.wrappers import Request, Response

from sandbox.kube import managed, paging, protobuf
from sandbox.kube.access import Access
from sandbox.kube.errors import ApiError, bad_request, not_found, unsupported_media_type
from sandbox.kube.objects import in_version
from sandbox.kube.patches import Patcher, accepted_types, check_patch_options
from sandbox.kube.resources import ResourceType
from sandbox.kube.routing import RequestInfo
from sandbox.kube.selectors import field_selector, label_selector
from sandbox.kube.store import Store
from sandbox.kube.tables import to_table, wants_table
from sandbox.kube.validation import field_validation_mode
from sandbox.kube.watch import DEFAULT_TIMEOUT_SECONDS, WatchRequest, WatchStream
from sandbox.kube.writes import WriteContext, Writer

Obj = dict[str, Any]
JSON = "application/json"
# JSON-family request bodies this double decodes (protobuf only for the kinds kubectl's typed
# commands send, see protobuf.py; no CBOR); the first two are listed by a 415.
BODY_TYPES = (
    "application/json",
    "application/yaml",
    "application/apply-patch+yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
)


def json_response(body: Any, code: int = 200, warnings: Iterable[str] = ()) -> Response:
    """A JSON response, with one ``Warning: 299 - "..."`` header per warning."""
    headers = Headers()
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        headers.add("Warning", f'299 - "{escaped}"')
    payload = json.dumps(body, separators=(",", ":"))
    return Response(payload, status=code, headers=headers, content_type=JSON)


def read_body(request: Request) -> Any:
    """The request body as JSON (or YAML when the client says so); 400 when undecodable."""
    raw = request.get_data()
    content_type = (request.content_type or "").split(";")[0].strip()
    if content_type == protobuf.MEDIA_TYPE:
        return protobuf.decode_object(raw)
    if content_type and content_type not in BODY_TYPES:
        raise unsupported_media_type([*BODY_TYPES[:2], protobuf.MEDIA_TYPE])
    try:
        if content_type in ("application/yaml", "application/apply-patch+yaml"):
            return yaml.safe_load(raw.decode("utf-8"))
        return json.loads(raw) if raw else None
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"the object provided is unrecognized: {exc}") from None


@dataclass(frozen=True, slots=True)
class Call:
    """One resource request, resolved."""

    request: Request
    info: RequestInfo
    rtype: ResourceType
    user: str

    @property
    def namespace(self) -> str:
        """The storage namespace ("" for cluster-scoped kinds)."""
        return self.info.namespace if self.rtype.namespaced else ""

    def arg(self, key: str) -> str | None:
        """One query parameter."""
        return self.request.args.get(key)


class ResourceHandlers:
    """get, list, watch, create, update, patch, delete and deletecollection."""

    def __init__(
        self,
        store: Store,
        access: Access,
        clock: Callable[[], datetime],
        bookmark_interval: float,
    ) -> None:
        self._store = store
        self._access = access
        self._clock = clock
        self._bookmark_interval = bookmark_interval
        self._writer = Writer(store, clock)
        self._patcher = Patcher(self._writer, store, clock)

    def dispatch(self, verb: str, call: Call) -> Response:
        """Run the handler of ``verb``."""
        handler: Callable[[Call], Response] = getattr(self, f"_{verb}")
        return handler(call)

    # ---- reads ---------------------------------------------------------------------------

    def _encode_one(self, call: Call, obj: Obj) -> Obj:
        if wants_table(call.request.headers.get("Accept")):
            rv = obj["metadata"].get("resourceVersion")
            return to_table(call.rtype, [obj], self._clock(), rv)
        return obj

    def _get(self, call: Call) -> Response:
        obj = self._store.get(call.rtype.group_resource, (call.namespace, call.info.name))
        if obj is None:
            raise not_found(call.rtype.plural, call.rtype.group, call.info.name)
        return json_response(self._encode_one(call, in_version(obj, call.rtype)))

    def _selected(self, call: Call) -> paging.Chunk:
        """The objects a list answers: selected, in one chunk of ``limit`` when asked, from
        the snapshot a ``continue`` token names (paging.py)."""
        rtype = call.rtype
        labels = label_selector(call.arg("labelSelector"))
        fields = field_selector(
            call.arg("fieldSelector"), rtype.extra_field_labels, rtype.custom, rtype.namespaced
        )
        limit = paging.parse_limit(call.arg("limit"))
        token = paging.check_continue(call.arg("continue"), call.arg("resourceVersion"))
        scope = call.namespace if call.info.namespaced_path else None
        if token is None:
            items, rv = self._store.snapshot(rtype.group_resource, scope)
        else:
            rv = token.rv
            kept = self._store.snapshot_at(rtype.group_resource, scope, rv)
            if kept is None:
                raise paging.expired_continue(token, self._store.resource_version)
            items = [o for o in kept if paging.key_of(o) > token.after]
        chosen = [in_version(o, rtype) for o in items if labels(o) and fields(o)]
        selected = bool(call.arg("labelSelector") or call.arg("fieldSelector"))
        return paging.chunk(chosen, rv, limit, selected=selected)

    def _list(self, call: Call) -> Response:
        answer = self._selected(call)
        items, rtype = answer.items, call.rtype
        if wants_table(call.request.headers.get("Accept")):
            rv = answer.metadata["resourceVersion"]
            return json_response(to_table(rtype, items, self._clock(), rv))
        if not rtype.custom:
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return json_response(
            {
                "kind": rtype.list_kind,
                "apiVersion": rtype.api_version,
                "metadata": answer.metadata,
                "items": items,
            }
        )

    def _watch(self, call: Call) -> Response:
        table = wants_table(call.request.headers.get("Accept"))
        rtype, now = call.rtype, self._clock

        def encode(obj: Obj) -> Obj:
            if not table:
                return obj
            return to_table(rtype, [obj], now(), obj["metadata"].get("resourceVersion"))

        stream = WatchStream(self._store, _watch_request(call), encode, self._bookmark_interval)
        return Response(iter(stream), status=200, content_type=JSON, direct_passthrough=True)

    # ---- writes --------------------------------------------------------------------------

    def _context(self, call: Call) -> WriteContext:
        manager = call.arg("fieldManager") or managed.manager_from_user_agent(
            call.request.headers.get("User-Agent", "")
        )
        dry_run = "All" in call.request.args.getlist("dryRun")
        return WriteContext(
            call.rtype,
            call.namespace,
            manager,
            field_validation_mode(call.arg("fieldValidation")),
            dry_run,
            call.info.subresource,
        )

    def _object_body(self, call: Call) -> Obj:
        body = read_body(call.request)
        if not isinstance(body, dict):
            raise bad_request(
                f"the object provided is unrecognized (must be of type {call.rtype.kind})"
            )
        return body

    def _create(self, call: Call) -> Response:
        body = self._object_body(call)
        if call.rtype.kind == "SelfSubjectAccessReview":
            return json_response(self._access.review(call.user, body), 201)
        result = self._writer.create(self._context(call), body)
        return json_response(in_version(result.obj, call.rtype), result.code, result.warnings)

    def _update(self, call: Call) -> Response:
        body = self._object_body(call)
        result = self._writer.update(self._context(call), call.info.name, body)
        return json_response(in_version(result.obj, call.rtype), result.code, result.warnings)

    def _patch(self, call: Call) -> Response:
        content_type = (call.request.content_type or "").split(";")[0].strip()
        if content_type not in accepted_types(call.rtype.custom):
            raise unsupported_media_type(accepted_types(call.rtype.custom))
        check_patch_options(content_type, call.arg("fieldManager"), call.arg("force"))
        force = (call.arg("force") or "").lower() == "true"
        result = self._patcher.patch(
            self._context(call), call.info.name, content_type, call.request.get_data(), force
        )
        return json_response(in_version(result.obj, call.rtype), result.code, result.warnings)

    def _delete(self, call: Call) -> Response:
        options = read_body(call.request) if call.request.get_data() else {}
        result = self._writer.delete(self._context(call), call.info.name, options or {})
        obj = result.obj
        if obj.get("kind") != "Status":
            obj = in_version(obj, call.rtype)
        return json_response(obj, result.code)

    def _deletecollection(self, call: Call) -> Response:
        items = self._selected(call).items
        ctx = self._context(call)
        deleted = []
        for item in items:
            try:
                deleted.append(self._writer.delete(ctx, item["metadata"]["name"], {}).obj)
            except ApiError as exc:
                if exc.code != 404:
                    raise
        return json_response(
            {
                "kind": call.rtype.list_kind,
                "apiVersion": call.rtype.api_version,
                "metadata": {"resourceVersion": str(self._store.resource_version)},
                "items": deleted,
            }
        )


def _flag(call: Call, key: str) -> bool:
    return (call.arg(key) or "").lower() in ("true", "1")


def _timeout(call: Call) -> float:
    raw = call.arg("timeoutSeconds")
    try:
        seconds = float(raw) if raw else 0.0
    except ValueError:
        raise bad_request(f"invalid timeoutSeconds: {raw!r}") from None
    return seconds if seconds > 0 else DEFAULT_TIMEOUT_SECONDS


def _watch_request(call: Call) -> WatchRequest:
    """The watch options of a request (ListOptions: selectors, version, bookmarks, timeout)."""
    rtype = call.rtype
    return WatchRequest(
        rtype=rtype,
        namespace=call.namespace if call.info.namespaced_path else None,
        labels=label_selector(call.arg("labelSelector")),
        fields=field_selector(
            call.arg("fieldSelector"), rtype.extra_field_labels, rtype.custom, rtype.namespaced
        ),
        resource_version=call.arg("resourceVersion"),
        bookmarks=_flag(call, "allowWatchBookmarks"),
        timeout=_timeout(call),
        send_initial_events=_flag(call, "sendInitialEvents"),
    )
