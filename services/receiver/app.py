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

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from flask import Flask, Response, request
from prometheus_client import REGISTRY, CollectorRegistry
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response as BaseResponse

from services.receiver.body import request_body
from services.receiver.intake import Answer, Incoming, Receiver, Stores
from services.receiver.metrics import ReceiverMetrics
from services.receiver.secrets import CachedSecrets, KubeSecrets, SecretSource
from services.receiver.verify import CaseFolded
from shared.metrics import CONTENT_TYPE, exposition
from shared.settings import Settings

LOG = logging.getLogger(__name__)
#: ``status`` words of the answers Flask or werkzeug make themselves.
_HTTP_STATUS = {400: "malformed", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}


#: What werkzeug leaves out of the ``HTTP_*`` headers: the CGI variables stand for them.
_CONTENT_HEADERS = frozenset({"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"})
_CGI_NAMES = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}
#: Encoded answers remembered: the answers to deliveries are a few fixed texts (a reason may
#: echo an event name, so the set is bounded rather than assumed small).
_ANSWERS_KEPT = 256


@lru_cache(maxsize=_ANSWERS_KEPT)
def _encoded(answer: Answer) -> bytes:
    """The answer's JSON body, encoded once (as Flask's ``jsonify`` would, keys sorted)."""
    return (json.dumps(answer.body(), sort_keys=True, separators=(",", ":")) + "\n").encode()


def _json(answer: Answer) -> Response:
    return Response(_encoded(answer), status=answer.code, mimetype="application/json")


class WsgiHeaders(CaseFolded):
    """The request headers, by lower-case name, read from the WSGI environ when asked for.

    The names werkzeug's ``EnvironHeaders`` has (``HTTP_*`` and a non-empty content type and
    length), lower-cased, without building a dict of every header for a delivery whose
    verifier and parser ask for three of them.
    """

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = environ

    def __getitem__(self, name: str) -> str:
        cgi = _CGI_NAMES.get(name)
        value = self._environ.get(cgi or "HTTP_" + name.upper().replace("-", "_"))
        if not isinstance(value, str) or (cgi and not value):
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        for key in self._environ:
            if key.startswith("HTTP_") and key not in _CONTENT_HEADERS:
                yield key[5:].replace("_", "-").lower()
        yield from (name for name, cgi in _CGI_NAMES.items() if self._environ.get(cgi))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _http_error(err: HTTPException) -> BaseResponse:
    """Flask's own errors (unknown path, wrong method, ...) as JSON, keeping their headers."""
    code = err.code or 400
    response = err.get_response()
    answer = Answer(code, _HTTP_STATUS.get(code, "error"), err.description or err.name)
    response.set_data(_json(answer).get_data())
    response.content_type = "application/json"
    return response


def _unexpected(err: Exception) -> Response:
    """Anything else: logged; 400 when reading the request failed, 503 otherwise."""
    if isinstance(err, (UnicodeError, ValueError)):
        LOG.warning("unreadable request: %s", type(err).__name__)
        return _json(Answer(400, "malformed", "the request could not be read"))
    LOG.exception("unexpected failure answering %s %s", request.method, request.path)
    return _json(Answer(503, "unavailable", "internal error; try again"))


def _register_views(
    app: Flask, receiver: Receiver, stores: Stores, settings: Settings, metrics: ReceiverMetrics
) -> None:
    limit = settings.max_body_bytes

    @app.post("/hook/<digest>", provide_automatic_options=False)
    def hook(digest: str) -> Response:
        started = time.perf_counter()
        incoming = Incoming(
            headers=WsgiHeaders(request.environ),
            content_type=request.content_type or "",
            read_body=lambda: request_body(request, limit),
        )
        answer = receiver.receive(digest, incoming)
        metrics.latency.observe(time.perf_counter() - started)
        return _json(answer)

    @app.get("/healthz")
    def healthz() -> Response:
        return _json(Answer(200, "ok", "serving"))

    @app.get("/readyz")
    def readyz() -> Response:
        if stores.directory.reachable():
            return _json(Answer(200, "ok", "Redis reachable"))
        return _json(Answer(503, "unavailable", "Redis unreachable"))

    @app.get("/metrics")
    def prometheus() -> Response:
        return Response(exposition(), content_type=CONTENT_TYPE)


def create_app(
    settings: Settings | None = None,
    *,
    store: Stores | None = None,
    secrets: SecretSource | None = None,
    clock: Callable[[], float] | None = None,
    registry: CollectorRegistry | None = None,
) -> Flask:
    """The receiver app. Defaults: Settings from the environment, Redis from them, Secrets
    through ``shared.kube``, the wall clock, the default metrics registry. Secrets and
    receiver records are cached (``Settings.secret_cache``, ``Settings.receiver_cache``)."""
    settings = settings or Settings.from_env()
    now = clock or time.time
    stores = Stores.connect(settings.redis_url, settings.key_prefix) if store is None else store
    source = KubeSecrets.from_settings(settings, now) if secrets is None else secrets
    metrics = ReceiverMetrics(REGISTRY if registry is None else registry)
    secret_cache = CachedSecrets(source, settings.secret_cache, now)
    receiver = Receiver(stores, secret_cache, now, metrics, settings.receiver_cache)
    app = Flask(__name__)
    # werkzeug's own bound, for any code that reads the body without ours (chunked: §3.7).
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes
    app.register_error_handler(HTTPException, _http_error)
    app.register_error_handler(Exception, _unexpected)
    _register_views(app, receiver, stores, settings, metrics)
    return app
