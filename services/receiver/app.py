"""The receiver's Flask app: ``POST /hook/<digest>``, ``/healthz``, ``/readyz``, ``/metrics`` (R1).

A factory with thin views: a view hands the request to ``intake.Receiver`` and turns its
``Answer`` into JSON. The app keeps no state between requests (records, secrets and notices
live in Redis and Kubernetes; the secret cache is only a cache), so it scales by replicas.
Every answer, including Flask's own 404/405 and any failure, is JSON
``{"status": ..., "reason": ...}``, and nothing a client sends can produce a 500: an
unexpected exception is logged and answered 503 (the host may retry), or 400 when it came
from reading the request itself.

Run under gunicorn: ``gunicorn -c services/receiver/gunicorn.conf.py
"services.receiver.app:create_app()"``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from flask import Flask, Response, request
from prometheus_client import REGISTRY, CollectorRegistry
from werkzeug.exceptions import HTTPException

from services.receiver.answers import http_error, json_response, unexpected
from services.receiver.audit import AuditIntake, AuditMetrics, AuditStores
from services.receiver.body import environ_body
from services.receiver.hook import Hook, HookFastPath, WsgiHeaders
from services.receiver.intake import Answer, Receiver, Stores
from services.receiver.metrics import ReceiverMetrics
from services.receiver.secrets import CachedSecrets, KubeSecrets, SecretSource
from shared.metrics import CONTENT_TYPE, exposition
from shared.settings import Settings
from shared.store.keys import Keys
from shared.store.receivers import receiver_client

__all__ = ["WsgiHeaders", "create_app"]  # WsgiHeaders lives in services.receiver.hook now

LOG = logging.getLogger(__name__)


def _unexpected(err: Exception) -> Response:
    """Anything else: logged; 400 when reading the request failed, 503 otherwise."""
    return json_response(unexpected(err, request.method, request.path))


def _register_views(app: Flask, hook: Hook, stores: Stores, audit: AuditIntake, limit: int) -> None:
    @app.post("/audit-webhook/<route>", provide_automatic_options=False)
    def audit_webhook(route: str) -> Response:
        return json_response(
            audit.receive(
                route, WsgiHeaders(request.environ), lambda: environ_body(request.environ, limit)
            )
        )

    @app.post("/hook/<digest>", provide_automatic_options=False)
    def delivery(digest: str) -> Response:
        # What HookFastPath answers in front of Flask; reached here by the other digests
        # (answered 404) and by the tests that compare the two paths.
        return json_response(hook.answer(digest, request.environ))

    @app.get("/healthz")
    def healthz() -> Response:
        return json_response(Answer(200, "ok", "serving"))

    @app.get("/readyz")
    def readyz() -> Response:
        if stores.directory.reachable():
            return json_response(Answer(200, "ok", "Redis reachable"))
        return json_response(Answer(503, "unavailable", "Redis unreachable"))

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(exposition(), content_type=CONTENT_TYPE)


def create_app(
    settings: Settings | None = None,
    *,
    store: Stores | None = None,
    audit_stores: AuditStores | None = None,
    secrets: SecretSource | None = None,
    clock: Callable[[], float] | None = None,
    registry: CollectorRegistry | None = None,
) -> Flask:
    """The receiver app. Defaults: Settings from the environment, Redis from them, Secrets
    through ``shared.kube``, the wall clock, the default metrics registry. Secrets and
    receiver records are cached (``Settings.secret_cache``, ``Settings.receiver_cache``)."""
    settings = settings or Settings.from_env()
    now = clock or time.time
    if store is None or audit_stores is None:  # one pool (redis-py connects on first use)
        client = receiver_client(settings.redis_url, min_replicas=settings.redis_min_replicas)
        keys = Keys(settings.key_prefix)
        store = Stores.over(client, keys) if store is None else store
        audit_stores = AuditStores.over(client, keys) if audit_stores is None else audit_stores
    stores = store
    source = KubeSecrets.from_settings(settings, now) if secrets is None else secrets
    metrics = ReceiverMetrics(REGISTRY if registry is None else registry)
    audit_metrics = AuditMetrics(REGISTRY if registry is None else registry)
    secret_cache = CachedSecrets(source, settings.secret_cache, now)
    receiver = Receiver(stores, secret_cache, now, metrics, settings.receiver_cache)
    app = Flask(__name__)
    # werkzeug's own bound, for any code that reads the body without ours (chunked: §3.7).
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.register_error_handler(HTTPException, http_error)
    app.register_error_handler(Exception, _unexpected)
    hook = Hook(receiver, metrics, settings.max_body_bytes)
    audit = AuditIntake(audit_stores, secret_cache, settings.namespace, audit_metrics)
    _register_views(app, hook, stores, audit, settings.max_body_bytes)
    app.wsgi_app = HookFastPath(app.wsgi_app, hook)  # type: ignore[method-assign]
    return app
