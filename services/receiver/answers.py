"""The receiver's answers as HTTP: one JSON body ``{"reason": ..., "status": ...}`` for each.

Shared by the Flask app (``services.receiver.app``) and the hook's WSGI fast path
(``services.receiver.hook``), so that the two give the same bytes: the same status line, the
same body, the same ``Content-Type`` and ``Content-Length``.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache

from flask import Response
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response as BaseResponse

from services.receiver.intake import Answer

LOG = logging.getLogger(__name__)
#: ``status`` words of the answers Flask or werkzeug make themselves.
_HTTP_STATUS = {400: "malformed", 404: "not_found", 405: "method_not_allowed", 413: "too_large"}
#: Encoded answers remembered: the answers to deliveries are a few fixed texts (a reason may
#: echo an event name, so the set is bounded rather than assumed small).
_ANSWERS_KEPT = 256
MEDIA_TYPE = "application/json"


@lru_cache(maxsize=_ANSWERS_KEPT)
def encoded(answer: Answer) -> bytes:
    """The answer's JSON body, encoded once (as Flask's ``jsonify`` would, keys sorted)."""
    return (json.dumps(answer.body(), sort_keys=True, separators=(",", ":")) + "\n").encode()


@lru_cache(maxsize=64)
def status_line(code: int) -> str:
    """The WSGI status werkzeug writes for ``code`` (``202 ACCEPTED``)."""
    return BaseResponse(status=code).status


def json_response(answer: Answer) -> Response:
    """The answer as a Flask response."""
    return Response(encoded(answer), status=answer.code, mimetype=MEDIA_TYPE)


def http_error(err: HTTPException) -> BaseResponse:
    """Flask's own errors (unknown path, wrong method, ...) as JSON, keeping their headers."""
    code = err.code or 400
    response = err.get_response()
    answer = Answer(code, _HTTP_STATUS.get(code, "error"), err.description or err.name)
    response.set_data(encoded(answer))
    response.content_type = MEDIA_TYPE
    return response


def unexpected(err: Exception, method: str, path: str) -> Answer:
    """Anything else: logged; 400 when reading the request failed, 503 otherwise."""
    if isinstance(err, (UnicodeError, ValueError)):
        LOG.warning("unreadable request: %s", type(err).__name__)
        return Answer(400, "malformed", "the request could not be read")
    LOG.exception("unexpected failure answering %s %s", method, path)
    return Answer(503, "unavailable", "internal error; try again")
