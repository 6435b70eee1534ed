"""One read deadline per request, from its first byte (C5), over a real socket pair.

The clock is injected: a deadline that has passed is refused without waiting, and the budget
starts at the first read, not when the request was armed.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from gunicorn.http import errors

from services.receiver.deadline import DeadlineSocket, SlowClient
from services.receiver.worker import error_response, refusal


@dataclass
class Wire:
    """Our end (a DeadlineSocket on a settable clock, armed for 10 s) and the client's end."""

    sock: DeadlineSocket
    raw: socket.socket
    client: socket.socket
    now: list[float]

    def read_one(self, data: bytes) -> bytes:
        self.client.sendall(data)
        return self.sock.recv(1024)


@pytest.fixture
def wire() -> Iterator[Wire]:
    ours, theirs = socket.socketpair()
    now = [100.0]
    sock = DeadlineSocket(ours, clock=lambda: now[0])
    sock.arm(10.0)
    yield Wire(sock, ours, theirs, now)
    ours.close()
    theirs.close()


def test_reads_share_one_deadline_counted_from_the_first_byte(wire: Wire) -> None:
    wire.now[0] = 150.0  # armed long before the first byte: the budget has not started
    assert wire.read_one(b"POST /hook/x HTTP/1.1\r\n") == b"POST /hook/x HTTP/1.1\r\n"
    wire.now[0] = 159.0  # 9 s of the 10 s used: still readable
    assert wire.read_one(b"Host: a\r\n") == b"Host: a\r\n"
    wire.now[0] = 160.0  # the 10 s are up, however much is waiting
    with pytest.raises(SlowClient):
        wire.read_one(b"X-Slow: 1\r\n")


def test_a_new_request_gets_a_new_budget_and_disarmed_reads_are_plain(wire: Wire) -> None:
    assert wire.read_one(b"a") == b"a"
    wire.now[0] = 120.0
    wire.sock.arm(10.0)  # the next request on a kept-alive connection
    assert wire.read_one(b"b") == b"b"
    wire.sock.disarm()
    wire.now[0] = 1000.0
    assert wire.read_one(b"c") == b"c"
    assert wire.raw.gettimeout() is None  # the answer is written as gunicorn writes it


def test_while_draining_a_run_out_deadline_is_a_plain_timeout(wire: Wire) -> None:
    """gunicorn's drain of an unread body closes the connection on TimeoutError."""
    wire.read_one(b"a")
    wire.sock.draining()
    wire.now[0] = 111.0
    with pytest.raises(TimeoutError) as raised:
        wire.read_one(b"b")
    assert not isinstance(raised.value, SlowClient)


def test_a_client_that_stops_sending_is_cut_at_the_deadline(wire: Wire) -> None:
    """With the wall clock: nothing more arrives, the read gives up after the budget."""
    sock = DeadlineSocket(wire.raw)
    sock.arm(0.05)
    with pytest.raises(SlowClient):
        sock.recv(1)


@pytest.mark.parametrize(
    ("exc", "code", "status"),
    [
        (SlowClient("slow"), 408, "timeout"),
        (errors.LimitRequestLine(5000, 4094), 414, "too_large"),
        (errors.LimitRequestHeaders("x"), 431, "too_large"),
        (errors.InvalidChunkSize(b"zz"), 400, "malformed"),
        (RuntimeError("a bug"), 503, "unavailable"),
    ],
)
def test_gunicorn_refusals_become_the_documented_json(
    exc: BaseException, code: int, status: str
) -> None:
    """W2: the worker's answer to what gunicorn raises: never HTML, never a 500."""
    got_code, phrase, got_status, reason = refusal(exc)
    assert (got_code, got_status) == (code, status)
    raw = error_response(got_code, phrase, got_status, reason)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {code} ".encode())
    assert b"Content-Type: application/json" in head and b"Connection: close" in head
    assert body == (f'{{"reason": "{reason}", "status": "{status}"}}\n').encode()


def test_waits_only_reads_what_is_there_whenever_and_holds_only_a_wait(wire: Wire) -> None:
    """A request judged whole in the buffer (answered on the loop thread): the app may take
    its time between reads; a read that has to wait gets what is left of the budget."""
    wire.sock.arm(0.05, waits_only=True)
    assert wire.read_one(b"POST /hook/x HTTP/1.1\r\n") == b"POST /hook/x HTTP/1.1\r\n"
    wire.now[0] += 10.0  # the app was slow: the budget is long gone
    assert wire.read_one(b"the rest") == b"the rest"  # it was there: read
    with pytest.raises(SlowClient):
        wire.sock.recv(1024)  # nothing there: a wait, and no budget left
