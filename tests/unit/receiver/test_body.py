"""The body bound holds without trusting Content-Length or werkzeug (R3, facts §3.7).

Facts: ../shared/facts/webhooks-git-libs.md §3.7: with ``Transfer-Encoding: chunked`` under
gunicorn, ``request.get_data()`` silently returns the first MAX_CONTENT_LENGTH bytes, so the
receiver reads the stream itself and stops one byte past the limit.
"""

from __future__ import annotations

import io

import pytest

from services.receiver.body import BodyTooLarge, read_bounded


class Endless(io.RawIOBase):
    """A stream that never ends (a chunked body that keeps coming), counting what was read."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert size > 0, "an unbounded read of an endless body"
        self.served += size
        return b"x" * size


def test_an_endless_body_is_refused_one_byte_past_the_limit() -> None:
    """The bound is on what is read, so an endless chunked body costs limit + 1 bytes."""
    stream = Endless()
    with pytest.raises(BodyTooLarge):
        read_bounded(stream, None, 1000)  # type: ignore[arg-type]
    assert stream.served == 1001


def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    """A Content-Length over the limit is refused without reading a byte."""
    stream = Endless()
    with pytest.raises(BodyTooLarge):
        read_bounded(stream, 1001, 1000)  # type: ignore[arg-type]
    assert stream.served == 0


@pytest.mark.parametrize("size", [0, 1, 999, 1000])
def test_a_body_up_to_the_limit_is_read_whole(size: int) -> None:
    """Exactly the limit is allowed; the body comes back byte for byte."""
    data = bytes(range(256)) * 4
    assert read_bounded(io.BytesIO(data[:size]), None, 1000) == data[:size]


class KeptOpen(io.RawIOBase):
    """A keep-alive connection: the declared body, then nothing until the client sends more."""

    def __init__(self, body: bytes) -> None:
        self._body = body
        self.reads = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        assert self._body, "read past the declared body: this would wait for the next request"
        self.reads += 1
        chunk, self._body = self._body[:size], self._body[size:]
        return chunk


def test_a_declared_body_is_read_without_looking_past_its_end() -> None:
    """With a Content-Length, reading stops at the declared length (one read for a small body)."""
    stream = KeptOpen(b'{"ref": "refs/heads/main"}')
    assert read_bounded(stream, 26, 1000) == b'{"ref": "refs/heads/main"}'  # type: ignore[arg-type]
    assert stream.reads == 1
