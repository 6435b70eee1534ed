"""Reading a request body with a hard bound, whether it has a Content-Length or is chunked.

Flask's ``MAX_CONTENT_LENGTH`` stops a body that declares its length, but with
``Transfer-Encoding: chunked`` under gunicorn ``request.get_data()`` silently returns the first
MAX bytes (facts: webhooks-git-libs.md §3.7). So the receiver never calls ``get_data``: it
reads werkzeug's guarded stream itself, a chunk at a time, and gives up as soon as one byte
more than the limit has arrived. Nothing larger than the limit (plus one chunk) is ever held
in memory.

A body that cannot be read is the client's fault, never a reason to ask it to try again (R3,
W1): broken chunked framing, or a client gone mid-body, is 400; a body that does not arrive
within the request's read deadline (``services.receiver.deadline``) is 408.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from gunicorn.http.errors import NoMoreData, ParseException
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wsgi import get_content_length, get_input_stream

from services.receiver.deadline import SlowClient

#: Bytes read from the socket at a time.
CHUNK = 64 * 1024


class BodyError(Exception):
    """The body cannot be had; ``code`` and ``status`` are the answer (R3)."""

    code = 400
    status = "malformed"


class BodyTooLarge(BodyError):
    """The body is longer than the limit (answered 413)."""

    code = 413
    status = "too_large"


class BodyMalformed(BodyError):
    """The body's framing is broken, or the client left mid-body (answered 400)."""


class BodyTooSlow(BodyError):
    """The body did not arrive within the request's read deadline (answered 408)."""

    code = 408
    status = "timeout"


def read_bounded(stream: IO[bytes], content_length: int | None, limit: int) -> bytes:
    """All of ``stream``, or BodyTooLarge once it proves longer than ``limit``."""
    if content_length is not None and content_length > limit:
        raise BodyTooLarge(f"Content-Length {content_length} exceeds {limit} bytes")
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise BodyTooLarge(f"the body exceeds {limit} bytes")
        chunks.append(chunk)
        if total == content_length:  # all that was declared: no read to find the end
            return b"".join(chunks)


def environ_body(environ: Mapping[str, Any], limit: int) -> bytes:
    """The request's body, bounded by ``limit``: werkzeug's and gunicorn's errors become ours
    (BodyTooLarge, BodyMalformed, BodyTooSlow).

    Read as a Flask view reads ``request.stream`` with ``MAX_CONTENT_LENGTH`` set to ``limit``
    (werkzeug's ``get_input_stream``), without a ``Request`` object.
    """
    try:
        stream = get_input_stream(environ, max_content_length=limit)  # type: ignore[arg-type]
        return read_bounded(stream, get_content_length(environ), limit)  # type: ignore[arg-type]
    except RequestEntityTooLarge as err:
        raise BodyTooLarge(f"the body exceeds {limit} bytes") from err
    except (ParseException, NoMoreData) as err:
        raise BodyMalformed(f"the body could not be read: {type(err).__name__}") from err
    except SlowClient as err:
        raise BodyTooSlow(str(err)) from err
