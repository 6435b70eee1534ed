"""The Kubernetes API server double: a threaded WSGI server, one instance per "cluster".

``KubeApiServer`` wires the kinds table, the store, access rules and the handlers into a
WSGI app and serves it with ``werkzeug.serving.make_server(..., threaded=True)`` in a thread.
Instances share nothing, so several clusters can run in one process. Requests are routed
as kube-apiserver routes them: non-resource paths (``/version``, discovery, OpenAPI,
health), then resource paths, authenticated (bearer token), authorized (rules), and handed
to one handler per verb. Every failure is answered as a ``Status`` object.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kubernetes.client
import yaml
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from sandbox.kube import discovery, openapi_docs
from sandbox.kube.access import Access, AccessRule, Attributes
from sandbox.kube.audit import AuditBackend, Audited, AuditWebhook, audited
from sandbox.kube.errors import ApiError, internal, method_not_allowed, path_not_found
from sandbox.kube.handlers import Call, ResourceHandlers, json_response
from sandbox.kube.objects import fill_create_fields
from sandbox.kube.patching import PatchError
from sandbox.kube.resources import CRD_GROUP, ResourceType, build_registry, load_crds
from sandbox.kube.routing import RequestInfo, parse_resource_path, request_verb
from sandbox.kube.store import Store

__all__ = ["AccessRule", "AuditWebhook", "KubeApiServer"]

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public")
# The real server sends bookmarks about once a minute; tests inject a small interval.
DEFAULT_BOOKMARK_INTERVAL = 60.0
# How often serve_forever checks for shutdown: stop() waits at most this long.
SHUTDOWN_POLL_SECONDS = 0.05
StartResponse = Callable[..., Any]


def _utc_now() -> datetime:
    return datetime.now(UTC)


class _RequestHandler(WSGIRequestHandler):
    """Logs each request at DEBUG on this module's logger, not as werkzeug's INFO lines."""

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One DEBUG line per request."""
        logger.debug("%s -> %s", self.requestline, code)


class KubeApiServer:
    """One API server: its objects, its rules, and (once started) its HTTP endpoint."""

    def __init__(
        self,
        crd_files: Sequence[Path] = (),
        *,
        tokens: Mapping[str, str] | None = None,
        rules: Sequence[AccessRule] | None = None,
        history: int = 1000,
        clock: Callable[[], datetime] = _utc_now,
        bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
    ) -> None:
        crds = load_crds(crd_files)
        self._registry = build_registry(crds)
        self._store = Store(history)
        self._clock = clock
        self._access = Access(tokens, rules)
        self._handlers = ResourceHandlers(self._store, self._access, clock, bookmark_interval)
        self._server: BaseWSGIServer | None = None
        self._thread: threading.Thread | None = None
        #: The audit webhook backend (``set_audit_webhook``); None: nothing is audited.
        self.audit: AuditBackend | None = None
        self.url = ""
        self.port = 0
        self._seed(crds)

    def _seed(self, crds: Sequence[Mapping[str, Any]]) -> None:
        for name in DEFAULT_NAMESPACES:
            self._seed_object(
                ("", "namespaces"),
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
        for crd in crds:
            self._seed_object((CRD_GROUP, "customresourcedefinitions"), _served_crd(crd))

    def _seed_object(self, resource: tuple[str, str], obj: dict[str, Any]) -> None:
        rtype = self._registry.storage_type(*resource)
        assert rtype is not None
        fill_create_fields(rtype, obj, self._clock())
        self._store.put(resource, obj)

    def preload(self, resource: tuple[str, str], objects: Iterable[dict[str, Any]]) -> int:
        """Store ``objects`` as if each had been created, without HTTP; returns how many.

        The scale benchmarks need a namespace that already holds tens of thousands of objects
        before the product starts; creating them one request at a time would take minutes.
        Each object gets the fields a create sets (uid, creationTimestamp, resourceVersion)
        and one ADDED event, exactly as ``_seed`` stores the built-in namespaces.
        """
        count = 0
        for obj in objects:
            self._seed_object(resource, obj)
            count += 1
        return count

    # ---- lifecycle -----------------------------------------------------------------------

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve in a background thread; returns the base URL."""
        self._server = make_server(
            host, port, self.wsgi_app, threaded=True, request_handler=_RequestHandler
        )
        self.port = self._server.server_port
        self.url = f"http://{host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name=f"kube-api-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self.url

    def set_audit_webhook(self, webhook: AuditWebhook | None) -> AuditBackend | None:
        """Send audit events to ``webhook`` from now on (None: stop auditing); the backend."""
        old, self.audit = self.audit, AuditBackend(webhook) if webhook is not None else None
        if old is not None:
            old.stop()
        return self.audit

    def open_watches(self) -> dict[tuple[str, str], int]:
        """How many watch streams are open now, by (group, resource)."""
        return self._store.open_watches()

    def stop(self) -> None:
        """End open watches and stop serving."""
        self._store.close()
        self.set_audit_webhook(None)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    def write_kubeconfig(
        self, path: Path, *, token: str | None = None, context: str = "sandbox"
    ) -> None:
        """A kubeconfig for kubectl pointing at this server (context ``context``)."""
        user: dict[str, Any] = {"token": token} if token else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": context,
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": context, "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": context, "namespace": "default"},
                }
            ],
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def api_client(self, token: str | None = None) -> kubernetes.client.ApiClient:
        """An official client configured for this server (tests use it)."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        if token:
            configuration.api_key = {"authorization": token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        return kubernetes.client.ApiClient(configuration)

    # ---- WSGI ----------------------------------------------------------------------------

    def wsgi_app(self, environ: dict[str, Any], start_response: StartResponse) -> Any:
        """The WSGI entry point; the outermost place errors are turned into Status bodies."""
        request = Request(environ)
        received = self._clock()
        seen: list[tuple[str, str, RequestInfo]] = []  # (user, verb, path info) once authorized
        try:
            response = self._dispatch(request, seen)
        except ApiError as exc:
            response = json_response(exc.status_body(), exc.code)
        except PatchError as exc:
            response = json_response(exc.status_body(), exc.status)
        except Exception as exc:  # the outermost handler of a request: answer 500, keep serving
            logger.exception("unhandled error on %s %s", request.method, request.path)
            error = internal(repr(exc))
            response = json_response(error.status_body(), error.code)
        if seen and self.audit is not None:
            self._audit(self.audit, request, seen[0], response, received)
        return response(environ, start_response)

    def _audit(
        self,
        backend: AuditBackend,
        request: Request,
        seen: tuple[str, str, RequestInfo],
        response: Response,
        received: datetime,
    ) -> None:
        user, verb, info = seen
        if not audited(verb, info.subresource):
            return
        try:
            body = json.loads(response.get_data())
        except ValueError:
            body = None
        uri = request.full_path if request.query_string else request.path
        backend.record(
            Audited(
                user=user,
                verb=verb,
                request_uri=uri,
                group=info.group,
                version=info.version,
                resource=info.resource,
                subresource=info.subresource,
                namespace=info.namespace,
                name=info.name,
                code=response.status_code,
                response=body,
                received=received,
                completed=self._clock(),
            )
        )

    def _dispatch(self, request: Request, seen: list[tuple[str, str, RequestInfo]]) -> Response:
        path = "/" + request.path.strip("/")
        document = self._non_resource(path, request)
        if document is not None:
            return document
        info = parse_resource_path(path)
        if info is None:
            raise path_not_found()
        user = self._access.authenticate(request.headers.get("Authorization"))
        rtype = self._registry.find(info.group, info.version, info.resource)
        if rtype is None or not _routable(rtype, info):
            raise path_not_found()
        verb = request_verb(request.method, info, request.args.get("watch"))
        seen.append((user, verb, info))
        self._access.check(
            Attributes(
                user, verb, info.group, info.resource, info.subresource, info.namespace, info.name
            )
        )
        if verb not in _served_verbs(rtype, info):
            raise method_not_allowed(rtype.plural, rtype.group, verb)
        return self._handlers.dispatch(verb, Call(request, info, rtype, user))

    def _non_resource(self, path: str, request: Request) -> Response | None:
        accept = request.headers.get("Accept")
        if path in ("/api", "/apis") and discovery.wants_aggregated(accept):
            body = discovery.aggregated(self._registry, core=path == "/api")
            response = json_response(body)
            response.headers["Content-Type"] = discovery.AGGREGATED_V2
            return response
        documents: dict[str, Callable[[], Any]] = {
            "/version": lambda: discovery.SERVER_VERSION,
            "/api": lambda: discovery.api_versions(f"{request.host}"),
            "/apis": lambda: discovery.api_group_list(self._registry),
            "/openapi/v3": lambda: openapi_docs.root_document(self._registry),
        }
        if path in documents:
            return json_response(documents[path]())
        if path in ("/healthz", "/livez", "/readyz"):
            return Response("ok", content_type="text/plain")
        return self._group_document(path)

    def _group_document(self, path: str) -> Response | None:
        parts = path.strip("/").split("/")
        if parts[:3] == ["openapi", "v3", "api"] and len(parts) == 4:
            body = openapi_docs.group_version_document(self._registry, "", parts[3])
        elif parts[:3] == ["openapi", "v3", "apis"] and len(parts) == 5:
            body = openapi_docs.group_version_document(self._registry, parts[3], parts[4])
        elif parts[0] == "api" and len(parts) == 2:
            body = discovery.api_resource_list(self._registry, "", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            body = discovery.api_group(self._registry, parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            body = discovery.api_resource_list(self._registry, parts[1], parts[2])
        else:
            return None
        if body is None:
            raise path_not_found()
        return json_response(body)


def _routable(rtype: ResourceType, info: RequestInfo) -> bool:
    """Whether the path exists: scope matches, and only a served status subresource."""
    if info.subresource and not (info.subresource == "status" and rtype.status_subresource):
        return False
    if rtype.namespaced:
        return info.namespaced_path or not info.name
    return not info.namespaced_path


def _served_verbs(rtype: ResourceType, info: RequestInfo) -> tuple[str, ...]:
    """Verbs at this path: /status takes get/update/patch; a namespaced kind's
    all-namespaces collection only list and watch."""
    if info.subresource:
        return ("get", "patch", "update")
    if rtype.namespaced and not info.namespaced_path:
        return tuple(v for v in rtype.verbs if v in ("list", "watch"))
    return rtype.verbs


def _served_crd(crd: Mapping[str, Any]) -> dict[str, Any]:
    """The CRD object as a server shows it once established."""
    spec = crd["spec"]
    names = spec["names"]
    return {
        "apiVersion": f"{CRD_GROUP}/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": crd["metadata"]["name"],
            "annotations": dict(crd["metadata"].get("annotations") or {}),
        },
        "spec": spec,
        "status": {
            "acceptedNames": names,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "True",
                    "reason": "NoConflicts",
                    "message": "no conflicts found",
                },
                {
                    "type": "Established",
                    "status": "True",
                    "reason": "InitialNamesAccepted",
                    "message": "the initial names have been accepted",
                },
            ],
            "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
        },
    }
