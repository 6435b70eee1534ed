"""When a delivery is answered on the worker's loop thread, and when a connection is shed.

``complete_request`` is judged on bytes alone; ``InlinePolicy`` on an injected clock; ``Board``
on a shared mapping, across a real fork for the claim that workers forked from the master
share it.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable

import pytest

from services.receiver import inline
from services.receiver.inline import Board, InlinePolicy, complete_request

BODY = b'{"ref": "refs/heads/main"}'


LINE = b"POST /hook/abc HTTP/1.1"


def delivery(body: bytes = BODY, *headers: bytes, line: bytes = LINE) -> bytes:
    head = [line, b"Host: r", *headers]
    if not any(h.lower().startswith(b"content-length") for h in headers):
        head.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def test_a_whole_delivery_is_complete() -> None:
    assert complete_request(delivery())
    assert complete_request(delivery(line=b"POST /hook/abc HTTP/1.0"))
    assert complete_request(delivery() + b"POST /hook/abc HTTP/1.1\r\n")  # the next one begun
    assert complete_request(delivery(b"", b"Content-Length: 0"))
    assert complete_request(delivery(BODY, b"content-length:\t%d" % len(BODY)))


@pytest.mark.parametrize("cut", [10, 30, -len(BODY) - 2, -1])
def test_a_delivery_cut_short_is_not(cut: int) -> None:
    """Within the request line, the head, at its blank line, within the body."""
    assert not complete_request(delivery()[:cut])


@pytest.mark.parametrize(
    "data",
    [
        delivery(line=b"GET /healthz HTTP/1.1"),
        delivery(line=b"POST /metrics HTTP/1.1"),
        delivery(line=b"PUT /hook/abc HTTP/1.1"),
        delivery(line=b"POST /hook/abc HTTP/2.0"),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS client hello
        delivery(BODY, b"Transfer-Encoding: chunked"),
        delivery(BODY, b"Content-Length: 26", b"Content-Length: 26"),
        delivery(BODY, b"Content-Length : 26"),
        delivery(BODY, b"Content-Length: +26"),
    ],
    ids=[
        "other route",
        "metrics",
        "other method",
        "not HTTP/1",
        "h2 preface",
        "tls",
        "chunked",
        "two lengths",
        "space before colon",
        "signed length",
    ],
)
def test_what_gunicorn_should_judge_in_a_thread_is_not(data: bytes) -> None:
    assert not complete_request(data)


def test_a_body_longer_than_the_buffer_shows_is_not() -> None:
    big = b"x" * 100
    assert not complete_request(delivery(big)[:-1])
    assert complete_request(delivery(big))


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_a_slow_inline_request_pauses_inline_answers_in_proportion() -> None:
    clock = Clock()
    policy = InlinePolicy(clock)
    assert policy.allowed()
    started = policy.now()
    clock.t += inline.SLOW_S / 2
    assert policy.served(started) is None and policy.allowed()
    started = policy.now()
    clock.t += 0.05
    took, pause = policy.served(started) or (0.0, 0.0)
    assert took == pytest.approx(0.05) and pause == inline.PAUSE_MIN_S
    assert not policy.allowed()
    clock.t += pause
    assert policy.allowed()
    started = policy.now()
    clock.t += 2.0  # a stalled Redis: timeout and retry
    _, pause = policy.served(started) or (0.0, 0.0)
    assert pause == pytest.approx(2.0 * inline.PAUSE_FACTOR)
    clock.t += pause - 0.001
    assert not policy.allowed()


def test_sheds_only_while_others_wait_a_sibling_keeps_up_and_not_too_often() -> None:
    clock = Clock()
    policy = InlinePolicy(clock)
    asked: list[int] = []

    def sibling(answer: bool) -> Callable[[], bool]:
        def ask() -> bool:
            asked.append(1)
            return answer

        return ask

    assert not policy.shed(0, sibling(True))
    assert not asked  # nothing waits: the board is not even read
    assert not policy.shed(3, sibling(False))  # everyone is busy: reconnecting helps no one
    assert policy.shed(1, sibling(True))
    clock.t += inline.SHED_EVERY_S / 2
    assert not policy.shed(1, sibling(True))
    clock.t += inline.SHED_EVERY_S
    assert policy.shed(1, sibling(True))


def test_the_board_sees_a_fresh_sibling_that_keeps_up() -> None:
    board = Board()
    assert not board.sibling_keeps_up(1, 50.0)
    board.post(1, keeping_up=True, now=50.0)
    assert not board.sibling_keeps_up(1, 50.0)  # its own post is not a sibling's
    board.post(2, keeping_up=False, now=50.0)
    assert not board.sibling_keeps_up(1, 50.0)  # behind
    board.post(2, keeping_up=True, now=50.0)
    assert board.sibling_keeps_up(1, 50.5)
    assert not board.sibling_keeps_up(1, 50.0 + inline.FRESH_S)  # gone quiet: a dead worker
    board.post(2 + inline.SLOTS, keeping_up=True, now=60.0)  # a later age, same post
    assert board.sibling_keeps_up(1, 60.1)


def test_workers_forked_after_the_board_share_it() -> None:
    memory = mmap.mmap(-1, inline.SLOTS * 16)
    board = Board(memory)
    pid = os.fork()
    if pid == 0:  # the sibling: posts, and is gone
        board.post(7, keeping_up=True, now=200.0)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert board.sibling_keeps_up(3, 200.5)
