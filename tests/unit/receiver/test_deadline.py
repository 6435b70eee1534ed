"""One read deadline per request, from its first byte, and one write deadline per answer (C5),
over a real socket pair.

The clock is injected: a deadline that has passed is refused without waiting, and the budget
starts at the first read, not when the request was armed.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from gunicorn.http import errors

from services.receiver.deadline import DeadlineSocket, SlowClient, SlowReader
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


def test_after_our_side_shuts_down_reads_wait_only_the_callers_timeout(wire: Wire) -> None:
    """gunicorn's graceful close (``util.close_graceful``) half-closes, then reads on a 2 s
    timeout of its own for the client's close; the request's budget no longer holds it (it
    held the thread for the rest of the read timeout, 10 s in the receiver)."""
    # Armed for 10 s on a clock that never moves: only the disarm ends a wait early.
    wire.sock.shutdown(socket.SHUT_WR)
    assert wire.client.recv(16) == b""  # the client saw our FIN
    wire.sock.settimeout(0.01)
    with pytest.raises(TimeoutError):  # the caller's timeout, not SlowClient after 10 s
        wire.sock.recv(16)
    wire.client.sendall(b"late")
    assert wire.sock.recv(16) == b"late"


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


def test_an_answer_the_client_takes_is_written_whole(wire: Wire) -> None:
    sock = DeadlineSocket(wire.raw, clock=lambda: wire.now[0], write_timeout_s=5.0)
    sock.sendall(b"HTTP/1.1 202 Accepted\r\n\r\n")
    assert wire.client.recv(1024) == b"HTTP/1.1 202 Accepted\r\n\r\n"
    assert wire.raw.gettimeout() is None  # blocking again, as gunicorn left it


def test_a_client_that_reads_nothing_is_cut_at_the_write_deadline(wire: Wire) -> None:
    """N6 (probe 2026-12-06): a client that pipelines requests and never reads the answers
    held a thread for as long as it stayed connected. With the wall clock and a small
    deadline: the buffers fill, the write gives up, and gunicorn sees a client gone (EPIPE)."""
    wire.raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sock = DeadlineSocket(wire.raw, write_timeout_s=0.05)
    with pytest.raises(SlowReader) as raised:
        sock.sendall(b"x" * (8 * 1024 * 1024))  # far more than both buffers hold
    assert isinstance(raised.value, BrokenPipeError) and raised.value.errno == errno.EPIPE
    assert wire.raw.gettimeout() is None


def test_the_write_deadline_covers_the_whole_answer(wire: Wire) -> None:
    """A client that reads a little now and then cannot stretch the deadline: it is one
    budget for the whole answer, on the injected clock."""
    sends = [0]

    class Ticking:
        """A socket that takes 1 KiB a send, and the clock moves 1 s on every send."""

        def send(self, data: memoryview) -> int:
            sends[0] += 1
            wire.now[0] += 1.0
            return min(len(data), 1024)

        def settimeout(self, value: float | None) -> None:
            assert value is None or value > 0

    sock = DeadlineSocket(Ticking(), clock=lambda: wire.now[0], write_timeout_s=3.0)  # type: ignore[arg-type]
    with pytest.raises(SlowReader):
        sock.sendall(b"y" * 100_000)
    assert sends[0] == 3  # three sends fit the 3 s; the fourth found the budget spent
