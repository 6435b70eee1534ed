"""The receiver benchmark's open-loop generator sends what it plans and reads whole replies."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from bench import openloop

REPLY = b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


def _request(rfile: Any) -> bytes | None:
    """One request (head and its 2-byte body) from the stream; None once the client is gone."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = rfile.readline()
        if not line:
            return None
        head += line
    return head + rfile.read(2)


class _Handler(socketserver.StreamRequestHandler):
    """Answers every request on a keep-alive connection with REPLY (bodies are 2 bytes)."""

    seen: list[bytes] = []

    def handle(self) -> None:
        while True:
            request = _request(self.rfile)
            if request is None:
                return
            _Handler.seen.append(request)
            self.wfile.write(REPLY[:40])  # the reply in two writes: a split head is read whole
            self.wfile.flush()
            self.wfile.write(REPLY[40:])


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Handler) as made:
        made.daemon_threads = True
        thread = threading.Thread(target=made.serve_forever, daemon=True)
        thread.start()
        yield made.server_address  # type: ignore[misc]
        made.shutdown()


def test_every_planned_request_is_sent_with_its_own_id_and_timed(server: tuple[str, int]) -> None:
    _Handler.seen.clear()
    head, tail = openloop.prepared("/hook/x", b"{}", {"X-A": "1"}, "X-Id")
    paced = openloop.run(openloop.Plan(server, head, tail, rate=500.0, count=40, connections=4))
    assert paced.failures == []
    assert len(paced.timings) == 40
    assert all(latency >= lateness >= 0.0 for latency, lateness in paced.timings)
    assert len(_Handler.seen) == 40
    ids = {request.split(b"X-Id: ")[1].split(b"\r\n")[0] for request in _Handler.seen}
    assert len(ids) == 40
    assert all(request.startswith(b"POST /hook/x HTTP/1.1\r\n") for request in _Handler.seen)
    assert all(b"Content-Length: 2\r\n" in request for request in _Handler.seen)


def test_a_reply_length_is_known_only_once_its_head_is_whole() -> None:
    assert openloop._reply_length(REPLY[:30]) is None
    assert openloop._reply_length(REPLY) == len(REPLY)


CLOSING = REPLY.replace(b"\r\nContent-Length", b"\r\nConnection: close\r\nContent-Length")


class _Closing(socketserver.StreamRequestHandler):
    """Answers one request with ``Connection: close`` and closes."""

    def handle(self) -> None:
        if _request(self.rfile) is not None:
            self.wfile.write(CLOSING)


def test_an_answer_that_closes_its_connection_is_followed_by_a_new_one() -> None:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Closing) as made:
        made.daemon_threads = True
        thread = threading.Thread(target=made.serve_forever, daemon=True)
        thread.start()
        head, tail = openloop.prepared("/hook/x", b"{}", {}, "X-Id")
        plan = openloop.Plan(made.server_address, head, tail, rate=500.0, count=12, connections=2)  # type: ignore[arg-type]
        paced = openloop.run(plan)
        made.shutdown()
    assert paced.failures == [] and len(paced.timings) == 12
    assert paced.reconnected == 12  # every answer closed its connection: each had a new one


class _Counting(_Handler):
    """Answers as ``_Handler`` does and counts the connections it was given."""

    connections = 0

    def setup(self) -> None:
        _Counting.connections += 1
        super().setup()


def test_fresh_sends_every_request_on_a_connection_of_its_own() -> None:
    """GitHub's shape: a connection per delivery, closed by the client after the answer."""
    _Handler.seen.clear()
    _Counting.connections = 0
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Counting) as made:
        made.daemon_threads = True
        thread = threading.Thread(target=made.serve_forever, daemon=True)
        thread.start()
        head, tail = openloop.prepared("/hook/x", b"{}", {}, "X-Id")
        plan = openloop.Plan(made.server_address, head, tail, 500.0, 15, 2, fresh=True)  # type: ignore[arg-type]
        paced = openloop.run(plan)
        made.shutdown()
    assert paced.failures == [] and len(paced.timings) == 15
    assert _Counting.connections == 15 and len(_Handler.seen) == 15
    assert paced.reconnected == 0
