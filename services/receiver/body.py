"""Reading a request body with a hard bound, whether it has a Content-Length or is chunked.

Flask's ``MAX_CONTENT_LENGTH`` stops a body that declares its length, but with
``Transfer-Encoding: chunked`` under gunicorn ``request.get_data()`` silently returns the first
MAX bytes (facts: webhooks-git-libs.md §3.7). So the receiver never calls ``get_data``: it
reads ``request.stream`` itself, a chunk at a time, and gives up as soon as one byte more than
the limit has arrived. Nothing larger than the limit (plus one chunk) is ever held in memory.
"""

from __future__ import annotations

from typing import IO

from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Request

#: Bytes read from the socket at a time.
CHUNK = 64 * 1024


class BodyTooLarge(Exception):
    """The body is longer than the limit (answered 413)."""


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


def request_body(request: Request, limit: int) -> bytes:
    """The request's body, bounded by ``limit`` (werkzeug's own limit errors become ours)."""
    try:
        return read_bounded(request.stream, request.content_length, limit)
    except RequestEntityTooLarge as err:
        raise BodyTooLarge(f"the body exceeds {limit} bytes") from err
