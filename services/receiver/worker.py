"""The receiver's gunicorn worker: ``gthread`` with a read deadline and JSON refusals (C5, W2).

gunicorn answers some requests itself, before the app runs: a request line or headers over its
limits (414, 431), a request it cannot parse (400). Its answers are HTML; ours are the JSON
``{"status", "reason"}`` every answer of the receiver is (docs/receiver.md, R3). And it reads a
request on a blocking socket with no timeout, so a client that trickles its headers or body
holds a thread for as long as it likes. This worker changes exactly those two things:

- each request's reads share one deadline (``Settings.receiver_read_timeout``, from its first
  byte; ``services.receiver.deadline``); a client slower than that is answered 408 and cut;
- ``handle_error`` writes JSON, and logs one line, without a traceback, for a client's error.

- a new connection waits for its first byte in gunicorn's poller, without a thread, and is
  closed if none comes within the read timeout. gunicorn hands it to a thread at once, which
  waits up to 5 s for that byte: idle connections (a proxy's spare ones, a client that
  connects early) then hold every thread, and a delivery on the next connection waits
  seconds for one to come free. Measured before the change (bench/receiver.py): the first
  request of a fresh connection took 8-23 ms at the median against 1.2 ms for the rest.

- a connection that closes after its answer lingers for its client's close (RFC 9112 9.6) on a
  thread of its own (``services.receiver.linger``), not on the loop thread, which gunicorn's
  worker holds for up to 2 s per such connection;
- a request whose whole head and body are already buffered is answered on the poller thread
  itself, without the hand-offs to a pool thread and back, and while other requests wait the
  worker sheds a connection now and then so that a sibling takes it
  (``services.receiver.inline`` says when and why; anything else goes to a pool thread).

Everything else (keep-alive, the poller that holds kept-alive connections) is gunicorn's
``ThreadWorker``. Set as ``worker_class`` in ``gunicorn.conf.py``.
"""

from __future__ import annotations

import errno
import json
import logging
import select
import selectors
import socket
import time
from concurrent import futures
from functools import partial
from typing import Any

from gunicorn.http import errors
from gunicorn.workers.gthread import TConn, ThreadWorker

from services.receiver import inline
from services.receiver.deadline import DeadlineSocket, SlowClient
from services.receiver.linger import Linger
from shared.settings import Settings

LOG = logging.getLogger(__name__)


def _raw(sock: Any) -> Any:
    """The plain socket under a ``DeadlineSocket`` (or whatever gunicorn holds)."""
    return sock.raw if isinstance(sock, DeadlineSocket) else sock


class Conn(TConn):  # type: ignore[misc]  # gunicorn has no type hints
    """gunicorn's connection, closed gracefully by a ``Linger`` instead of on the loop thread."""

    linger: Linger | None = None

    def close(self, graceful: bool = False) -> None:
        raw = _raw(self.sock)
        if graceful and self.linger is not None and isinstance(raw, socket.socket):
            self.linger.close(raw)
        else:
            super().close(graceful)


#: How long a stopping worker waits for connections still lingering (gunicorn's own linger).
LINGER_ON_STOP_S = 2.0

#: Created on import, in gunicorn's master (which loads the worker class before it forks):
#: every worker of the pod shares it (``services.receiver.inline.Board``).
BOARD = inline.Board()

#: What gunicorn refuses, by the exception its parser raises, as (code, reason phrase, status,
#: reason); the first match wins, so subclasses come before ``ParseException``.
_REFUSALS: tuple[tuple[type[BaseException], int, str, str, str], ...] = (
    (SlowClient, 408, "Request Timeout", "timeout", "the request did not arrive in time"),
    (errors.LimitRequestLine, 414, "URI Too Long", "too_large", "the request line is too long"),
    (
        errors.LimitRequestHeaders,
        431,
        "Request Header Fields Too Large",
        "too_large",
        "too many or too large headers",
    ),
    (
        errors.UnsupportedTransferCoding,
        501,
        "Not Implemented",
        "not_implemented",
        "unsupported transfer coding",
    ),
    (errors.ParseException, 400, "Bad Request", "malformed", "the request could not be parsed"),
)
_FAILED = (503, "Service Unavailable", "unavailable", "internal error; try again")


def refusal(exc: BaseException) -> tuple[int, str, str, str]:
    """(code, reason phrase, ``status``, ``reason``) of the answer to what gunicorn raised."""
    for kind, code, phrase, status, reason in _REFUSALS:
        if isinstance(exc, kind):
            return code, phrase, status, reason
    return _FAILED


def error_response(code: int, phrase: str, status: str, reason: str) -> bytes:
    """A complete HTTP/1.1 answer with the receiver's JSON body; the connection closes."""
    body = (json.dumps({"status": status, "reason": reason}, sort_keys=True) + "\n").encode()
    head = (
        f"HTTP/1.1 {code} {phrase}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class ReceiverWorker(ThreadWorker):  # type: ignore[misc]  # gunicorn has no type hints
    """gunicorn's threaded worker with a per-request read deadline, JSON refusals, whole
    deliveries answered on the loop thread (shedding a connection to a sibling that keeps up)
    and graceful closes lingering off it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout_s = Settings.from_env().receiver_read_timeout.total_seconds()
        self.inline_policy = inline.InlinePolicy()
        #: Plain HTTP/1 only: a TLS or HTTP/2 connection is never judged from its raw bytes.
        self.inline_enabled = not self.cfg.is_ssl and "h2" not in self.cfg.http_protocols
        self._inline_conn: Any = None  # the connection the loop thread is answering
        self._waiting = 0  # events of the current poll not dispatched yet
        #: Plain sockets only: a TLS close is gunicorn's own (it has to send close_notify).
        self.linger = None if self.cfg.is_ssl else Linger()

    def run(self) -> None:
        """gunicorn's loop; then what still lingers is given its time before the process ends
        (the linger thread dies with it)."""
        super().run()
        if self.linger is not None:
            self.linger.finish(LINGER_ON_STOP_S)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """gunicorn's dispatch, counting the events still to dispatch (``_waiting``): the
        requests that wait while the loop thread answers one."""
        try:
            events = self.poller.select(timeout)
            self._waiting = len(events)
            BOARD.post(self.age, len(events) <= 1, time.monotonic())
            for key, _ in events:
                self._waiting -= 1
                key.data(key.fileobj)
        except OSError as e:
            if e.errno != errno.EINTR:
                raise
        finally:
            self._waiting = 0

    def _sibling(self) -> bool:
        return BOARD.sibling_keeps_up(self.age, time.monotonic())

    def _answerable_inline(self, conn: Any) -> bool:
        """Whether the connection's next request is whole in its buffer and may be answered
        on this thread now."""
        if not (self.inline_enabled and self.alive and self.inline_policy.allowed()):
            return False
        if conn.parser is not None and conn.parser.unreader.buf.getvalue():
            return False  # gunicorn read ahead: the request is partly in its buffer, not ours
        raw = _raw(conn.sock)
        try:
            data = raw.recv(inline.PEEK_BYTES, socket.MSG_PEEK)
            writable = select.poll()
            writable.register(raw, select.POLLOUT)
            if not writable.poll(0):
                return False  # a client that does not read its answers: a thread waits on it
        except OSError:  # nothing after all, or an error a thread will meet and report
            return False
        return inline.complete_request(data)

    def _answer_inline(self, conn: Any) -> None:
        """Answer the request on this thread, then what gunicorn's pool does after one."""
        started = self.inline_policy.now()
        self._inline_conn = conn
        done: futures.Future[Any] = futures.Future()
        try:
            done.set_result(self.handle(conn, inline.READ_BUDGET_S))
        except Exception as exc:  # finish_request closes the connection, as for a thread's
            done.set_exception(exc)
        finally:
            self._inline_conn = None
        slow = self.inline_policy.served(started)
        if slow is not None:
            LOG.info(
                "a request took %.0f ms on the loop thread; threads answer for the next %.1f s",
                slow[0] * 1000,
                slow[1],
            )
        self.finish_request(conn, done)

    def _took_inline(self, conn: Any, client: Any, held: Any) -> bool:
        """Whether the readable connection (in ``held``: kept-alive or pending) was answered
        here, its request being whole; if not, gunicorn hands it to a thread."""
        if not self._answerable_inline(conn):
            return False
        self.poller.unregister(client)
        held.remove(conn)
        conn.data_ready = True  # what gunicorn marks on a pending one before its thread runs
        self._answer_inline(conn)
        return True

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        """A kept-alive connection has data: answered here if the request is whole."""
        if not self._took_inline(conn, client, self.keepalived_conns):
            super().on_client_socket_readable(conn, client)

    def on_pending_socket_readable(self, conn: Any, client: Any) -> None:
        """A new connection's first bytes: answered here if the request is whole."""
        if not self._took_inline(conn, client, self.pending_conns):
            super().on_pending_socket_readable(conn, client)

    def accept(self, listener: Any) -> None:
        """A new connection goes to the poller, not to a thread, until its first byte.

        It joins gunicorn's pending connections (those a thread gave up waiting on): readable,
        it is handed to a thread with its data ready; silent for the read timeout, gunicorn's
        loop closes it (``murder_pending``, checked about once a second). Every pending
        connection gets the same timeout from when it was added, so the queue stays in the
        order it expires in, as ``murder_pending`` expects (and none is ever deferred by a
        thread: one handed over with its data ready is not waited on).
        """
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        client_sock.setblocking(False)
        conn = Conn(self.cfg, client_sock, client_addr, listener.getsockname())
        conn.linger = self.linger
        conn.timeout = time.monotonic() + self.read_timeout_s
        self.pending_conns.append(conn)
        self.poller.register(
            client_sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )

    def _cap_keepalive(self, deadline: float) -> None:
        """A stopping worker keeps a silent new connection no longer than a kept-alive one."""
        super()._cap_keepalive(deadline)
        for conn in self.pending_conns:  # all capped alike: the queue keeps its order
            conn.timeout = min(conn.timeout, deadline)

    def handle(self, conn: Any, budget_s: float | None = None) -> Any:
        """Read (and answer) the connection's next request under a fresh deadline: the read
        timeout, or ``budget_s`` for a request judged whole in its buffer (answered inline)."""
        if not conn.initialized and not self.cfg.is_ssl:
            conn.sock = DeadlineSocket(conn.sock)  # before gunicorn's parser takes it
        sock = conn.sock
        if isinstance(sock, DeadlineSocket):
            if budget_s is None:
                sock.arm(self.read_timeout_s)
            else:  # the request is buffered: only a read that finds nothing is held to this
                sock.arm(budget_s, waits_only=True)
        try:
            return super().handle(conn)
        finally:
            if isinstance(sock, DeadlineSocket):
                sock.disarm()

    def handle_request(self, req: Any, conn: Any) -> Any:
        """The app's turn; gunicorn then drains an unread body, within the same deadline.

        Answered inline while other requests wait, the connection may be shed (the answer
        says ``Connection: close``, and the client's next connection goes to whichever worker
        accepts it first: one that is not busy)."""
        if conn is self._inline_conn and self.inline_policy.shed(self._waiting, self._sibling):
            req.must_close = True
        try:
            return super().handle_request(req, conn)
        finally:
            if isinstance(conn.sock, DeadlineSocket):
                conn.sock.draining()

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        """What gunicorn refused (or failed at) outside the app, answered in JSON."""
        code, phrase, status, reason = refusal(exc)
        if code >= 500 and status == "unavailable":
            LOG.error("failure outside the app", exc_info=exc)
        else:
            LOG.info("request refused before the app: %s %s", code, type(exc).__name__)
        try:
            client.sendall(error_response(code, phrase, status, reason))
        except OSError:
            LOG.debug("the refusal could not be sent")
