"""The receiver's gunicorn worker answering whole deliveries on its loop thread, over sockets.

The worker is built as gunicorn's arbiter builds it and driven one poll at a time (no master,
no fork): a tiny WSGI app stands for the receiver, so what is checked is the worker alone.
Every client sends its bytes before the loop polls, so a poll finds them ready; nothing waits
on time except a bound on how many polls an answer may take.
"""

from __future__ import annotations

import os
import re
import selectors
import socket
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from services.receiver import inline
from services.receiver import worker as worker_module
from services.receiver.linger import Linger
from services.receiver.worker import ReceiverWorker

BODY = b'{"ref": "refs/heads/main"}'
#: Polls (of at most POLL_S each) within which an answer that needs no pool thread arrives.
POLLS = 20
POLL_S = 0.1
#: A bound on waiting for the linger thread, for a hang to fail rather than block the run.
WAIT_S = 10.0
AGE, SIBLING = 1, 2


def delivery(body: bytes = BODY, extra: bytes = b"") -> bytes:
    head = b"POST /hook/abc HTTP/1.1\r\nHost: r\r\n%sContent-Length: %d\r\n\r\n"
    return head % (extra, len(body)) + body


@dataclass
class App:
    """202 to every request; ``during`` runs inside each (a test's hook)."""

    served: list[str] = field(default_factory=list)
    during: Any = None
    before: Any = None  # runs before the body is read (the receiver looks its record up first)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        if self.before is not None:
            self.before()
        environ["wsgi.input"].read()
        self.served.append(environ["PATH_INFO"])
        if self.during is not None:
            self.during()
        body = b'{"status": "accepted"}'
        start_response("202 Accepted", [("Content-Length", str(len(body)))])
        return [body]


@dataclass
class Rig:
    worker: ReceiverWorker
    app: App
    address: tuple[str, int]
    clients: list[socket.socket] = field(default_factory=list)
    pooled: list[object] = field(default_factory=list)

    def connect(self) -> socket.socket:
        client = socket.create_connection(self.address, timeout=5)
        self.clients.append(client)
        return client

    def poll(self) -> None:
        self.worker.wait_for_and_dispatch_events(POLL_S)

    def answer(self, client: socket.socket) -> bytes:
        """One whole answer on ``client`` (head and Content-Length body), the loop polling
        until it is there."""
        data = b""
        for _ in range(POLLS):
            data += _ready(client)
            end = data.find(b"\r\n\r\n")
            if end >= 0:
                length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", data[:end])
                assert length, data
                if len(data) >= end + 4 + int(length.group(1)):
                    assert len(data) == end + 4 + int(length.group(1)), data  # one answer
                    return data
            self.poll()
        raise AssertionError(f"no answer within {POLLS} polls: {data!r}")


def _ready(client: socket.socket) -> bytes:
    """What has arrived on ``client``, without waiting."""
    chunks = b""
    selector = selectors.DefaultSelector()
    selector.register(client, selectors.EVENT_READ)
    try:
        while selector.select(0):
            chunk = client.recv(65536)
            if not chunk:
                break
            chunks += chunk
    finally:
        selector.close()
    return chunks


@pytest.fixture
def rig() -> Iterator[Rig]:
    cfg = Config()
    cfg.set("threads", 1)  # one pool thread: a slow client holds every thread there is
    cfg.set("keepalive", 2)
    listener = socket.create_server(("127.0.0.1", 0))
    app = App()
    worker = ReceiverWorker(AGE, os.getppid(), [listener], None, 30, cfg, Logger(cfg))
    worker.pid = os.getpid()
    worker.wsgi = app
    worker.tpool = worker.get_thread_pool()
    worker.poller = selectors.DefaultSelector()
    worker.method_queue.init()
    worker.poller.register(
        worker.method_queue.fileno(), selectors.EVENT_READ, worker.method_queue.run_callbacks
    )
    worker.set_accept_enabled(True)
    rig = Rig(worker, app, listener.getsockname())
    enqueue = worker.enqueue_req

    def pooled(conn: object) -> None:
        rig.pooled.append(conn)
        enqueue(conn)

    worker.enqueue_req = pooled
    yield rig
    for client in rig.clients:
        client.close()
    worker.tpool.shutdown(wait=True)
    worker.poller.close()
    worker.method_queue.close()
    listener.close()
    worker_module.BOARD.post(SIBLING, keeping_up=False, now=0.0)


def test_a_whole_delivery_is_answered_while_every_thread_is_held(rig: Rig) -> None:
    """The one pool thread waits for a body that does not come; a whole delivery on another
    connection is answered all the same, on the loop thread (the old worker queued it behind
    the slow one for the read timeout)."""
    slow = rig.connect()
    slow.sendall(delivery()[:-5])
    for _ in range(POLLS):  # accepted, then handed to the pool thread, which waits in recv
        if rig.pooled:
            break
        rig.poll()
    assert rig.pooled
    whole = rig.connect()
    whole.sendall(delivery())
    assert rig.answer(whole).startswith(b"HTTP/1.1 202")
    assert rig.pooled == rig.pooled[:1]  # only the slow one went to a thread
    slow.sendall(delivery()[-5:])  # the slow client finishes: the thread answers it
    assert rig.answer(slow).startswith(b"HTTP/1.1 202")


def _kept_alive(rig: Rig, count: int) -> list[socket.socket]:
    clients = [rig.connect() for _ in range(count)]
    for client in clients:
        client.sendall(delivery())
        assert b"connection: close" not in rig.answer(client).lower()
    return clients


def _together(rig: Rig, clients: list[socket.socket]) -> list[bytes]:
    """One delivery on each client, all ready before the loop polls once."""
    for client in clients:
        client.sendall(delivery())
    rig.poll()
    return [rig.answer(client) for client in clients]


def test_a_busy_worker_sheds_one_connection_when_a_sibling_keeps_up(rig: Rig) -> None:
    rig.worker.inline_policy = inline.InlinePolicy(lambda: 500.0)  # one instant: one shed
    clients = _kept_alive(rig, 3)
    answers = _together(rig, clients)  # no sibling posted: nobody to take a connection
    assert all(a.startswith(b"HTTP/1.1 202") for a in answers)
    assert not any(b"connection: close" in a.lower() for a in answers)
    worker_module.BOARD.post(SIBLING, keeping_up=True, now=time.monotonic())
    answers = _together(rig, clients)
    assert all(a.startswith(b"HTTP/1.1 202") for a in answers), answers
    closing = [a for a in answers if b"connection: close" in a.lower()]
    assert len(closing) == 1  # the first answered while others waited; one per interval


def test_a_sibling_that_is_behind_takes_nothing(rig: Rig) -> None:
    clients = _kept_alive(rig, 2)
    worker_module.BOARD.post(SIBLING, keeping_up=False, now=time.monotonic())
    answers = _together(rig, clients)
    assert not any(b"connection: close" in a.lower() for a in answers)


def test_a_slow_inline_answer_sends_the_next_ones_to_threads(rig: Rig) -> None:
    now = [500.0]
    rig.worker.inline_policy = inline.InlinePolicy(lambda: now[0])
    (client,) = _kept_alive(rig, 1)
    assert rig.pooled == []  # answered on the loop thread

    def stall() -> None:  # the app waited on a stalled Redis
        now[0] += 0.5

    rig.app.during = stall
    client.sendall(delivery())
    assert rig.answer(client).startswith(b"HTTP/1.1 202")
    assert rig.pooled == []  # that one was inline too; the next ones are not
    rig.app.during = None
    client.sendall(delivery())
    assert rig.answer(client).startswith(b"HTTP/1.1 202")
    assert len(rig.pooled) == 1
    now[0] += 0.5 * inline.PAUSE_FACTOR  # the pause is over
    client.sendall(delivery())
    assert rig.answer(client).startswith(b"HTTP/1.1 202")
    assert len(rig.pooled) == 1


def test_other_routes_go_to_a_thread(rig: Rig) -> None:
    client = rig.connect()
    client.sendall(b"GET /healthz HTTP/1.1\r\nHost: r\r\n\r\n")
    assert rig.answer(client).startswith(b"HTTP/1.1 202")
    assert len(rig.pooled) == 1 and rig.app.served == ["/healthz"]


def test_a_client_that_keeps_its_socket_after_a_closing_answer_holds_nothing(rig: Rig) -> None:
    """gunicorn waits for such a client to close (up to 2 s) on the thread that closes, which
    for its threaded worker is the loop thread; ours lingers on a thread of its own, so the
    next delivery is answered while the first client still holds its socket."""
    closed = threading.Event()
    rig.worker.linger = Linger(timeout_s=3600, closed=lambda sock: closed.set())
    keeper = rig.connect()
    keeper.sendall(delivery(extra=b"Connection: close\r\n"))
    assert b"connection: close" in rig.answer(keeper).lower()
    other = rig.connect()
    other.sendall(delivery())
    assert rig.answer(other).startswith(b"HTTP/1.1 202")
    assert not closed.is_set()  # still lingering: the keeper has not closed
    keeper.close()
    assert closed.wait(WAIT_S)


def test_a_whole_delivery_is_not_cut_while_the_app_works_before_reading_its_body(
    rig: Rig,
) -> None:
    """gunicorn reads the head with one recv of 8 KiB; the rest of a larger body is read when
    the app reads it, after its Redis lookup. All of it is in the buffer: however long the app
    took (here 60 ms, past the 50 ms a read on the loop thread may wait), it is read."""
    rig.app.before = lambda: time.sleep(inline.READ_BUDGET_S + 0.01)  # a slow Redis lookup
    client = rig.connect()
    client.sendall(delivery(b"{" + b" " * 20_000 + b"}"))
    assert rig.answer(client).startswith(b"HTTP/1.1 202")
    assert rig.pooled == []
