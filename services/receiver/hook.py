"""``POST /hook/<digest>`` straight from the WSGI environ, in front of Flask (R1).

A delivery is the one request the receiver serves in bulk, and Flask's machinery for it (a
request context, URL matching, a ``Request`` and a ``Response`` object, the dispatch) cost
about a third of the CPU of a stored delivery under gunicorn. ``HookFastPath`` wraps the Flask
app's ``wsgi_app``: a ``POST`` to ``/hook/`` followed by a 64-hex digest (the only shape of
path that can name a receiver) is answered here, by the same ``Hook`` the Flask view calls;
every other request (``/healthz``, ``/readyz``, ``/metrics``, any other method or path) goes
to Flask unchanged. The answers are the Flask route's, byte for byte: status line, JSON body,
``Content-Type`` and ``Content-Length`` (``services.receiver.answers``); werkzeug's own
errors raised while reading the body are answered by the same handler, and anything
unexpected is the same logged 503 (or 400), never a 500. The body is read through werkzeug's
``get_input_stream`` with the same bound and under the same read deadline
(``services.receiver.body``). The Flask route stays: ``HookFastPath.flask`` is the app
without the fast path, which the tests compare it with.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from werkzeug.exceptions import HTTPException

from services.receiver.answers import MEDIA_TYPE, encoded, http_error, status_line, unexpected
from services.receiver.body import environ_body
from services.receiver.intake import DIGEST, Answer, Incoming, Receiver
from services.receiver.metrics import ReceiverMetrics
from services.receiver.verify import CaseFolded

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

PREFIX = "/hook/"
_DIGEST_AT = len(PREFIX)
#: What werkzeug leaves out of the ``HTTP_*`` headers: the CGI variables stand for them.
_CONTENT_HEADERS = frozenset({"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"})
_CGI_NAMES = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}


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


class Hook:
    """One delivery's answer from its environ, timed in the latency histogram; what both the
    Flask view and the fast path call."""

    __slots__ = ("_limit", "_metrics", "_receiver")

    def __init__(self, receiver: Receiver, metrics: ReceiverMetrics, limit: int) -> None:
        self._receiver = receiver
        self._metrics = metrics
        self._limit = limit

    def answer(self, digest: str, environ: WSGIEnvironment) -> Answer:
        """The answer to ``POST /hook/<digest>`` (raises what the receiver does not catch)."""
        started = time.perf_counter()
        incoming = Incoming(
            headers=WsgiHeaders(environ),
            content_type=environ.get("CONTENT_TYPE") or "",
            read_body=lambda: environ_body(environ, self._limit),
        )
        answer = self._receiver.receive(digest, incoming)
        self._metrics.latency.observe(time.perf_counter() - started)
        return answer


class HookFastPath:
    """WSGI middleware: deliveries answered by ``hook``, everything else by ``flask``."""

    __slots__ = ("flask", "hook")

    def __init__(self, flask: WSGIApplication, hook: Hook) -> None:
        self.flask = flask
        self.hook = hook

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if (
            environ.get("REQUEST_METHOD") != "POST"
            or not path.startswith(PREFIX)
            or DIGEST.fullmatch(path, _DIGEST_AT) is None
        ):
            return self.flask(environ, start_response)
        try:
            answer = self.hook.answer(path[_DIGEST_AT:], environ)
        except HTTPException as err:  # werkzeug's, from reading the body: Flask's handler
            return http_error(err)(environ, start_response)
        except Exception as err:  # the app's last resort, as Flask's handler is
            answer = unexpected(err, "POST", path)
        body = encoded(answer)
        headers = [("Content-Type", MEDIA_TYPE), ("Content-Length", str(len(body)))]
        start_response(status_line(answer.code), headers)
        return [body]
