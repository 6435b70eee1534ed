"""The receiver's gunicorn worker: stock ``gthread`` plus deadlines and JSON refusals (C5, W2).

Real webhook traffic is a few deliveries a second, each usually on a new connection; receivers
scale by replicas (docs/receiver.md "Scaling"). So the worker is gunicorn's ``ThreadWorker`` and
changes only what a product rule needs:

- **Read and write deadlines** (C5, slow clients): each request's reads share one deadline
  (``Settings.receiver_read_timeout``, from its first byte) and each answer's writes another of
  the same length (``services.receiver.deadline``). gunicorn reads and writes on blocking sockets
  with no timeout, so a client that trickles its request, or pipelines requests and never reads
  the answers, would hold a thread for as long as it stays connected.
- **Idle connections hold no thread** (C5): gunicorn gives each new connection a thread that
  waits up to 5 s for its first byte, so a few dozen silent connections (a proxy's spare ones,
  a scanner) take every thread. A new connection waits in gunicorn's own poller instead, with
  the read timeout; and when the worker is at ``worker_connections``, the oldest connection that
  has not sent a byte is closed to make room, instead of gunicorn's refusal to accept anything
  more: silent connections, however many, never stop a delivery from being accepted.
- **JSON refusals** (W2): what gunicorn refuses before the app runs (414, 431, 400, 501, a read
  deadline's 408) is answered with the receiver's JSON, and logged as one line.
- **Graceful closes off the loop thread**: gunicorn lingers for a closing client (RFC 9112
  9.6, up to 2 s) on its loop thread, which stalls every connection of the worker; a ``Linger``
  thread does it (``services.receiver.linger``).

Every gunicorn attribute and method this touches is pinned by
``tests/unit/receiver/test_gunicorn_pins.py``, so an upgrade that moves one fails at once.
"""

from __future__ import annotations

import errno
import json
import logging
import selectors
import socket
import time
from functools import partial
from typing import Any

from gunicorn.http import errors
from gunicorn.workers.gthread import TConn, ThreadWorker

from services.receiver.deadline import DeadlineSocket, SlowClient
from services.receiver.linger import Linger
from shared.settings import Settings

LOG = logging.getLogger(__name__)

#: How long a stopping worker waits for connections still lingering (gunicorn's own linger).
LINGER_ON_STOP_S = 2.0


class Conn(TConn):  # type: ignore[misc]  # gunicorn has no type hints
    """gunicorn's connection, closed gracefully by a ``Linger`` instead of on the loop thread."""

    linger: Linger | None = None

    def close(self, graceful: bool = False) -> None:
        raw = self.sock.raw if isinstance(self.sock, DeadlineSocket) else self.sock
        if graceful and self.linger is not None and isinstance(raw, socket.socket):
            self.linger.close(raw)
        else:
            super().close(graceful)


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
    """gunicorn's threaded worker with read and write deadlines, idle connections in the poller
    (the oldest closed when the worker is full), JSON refusals and graceful closes off the loop
    thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout_s = Settings.from_env().receiver_read_timeout.total_seconds()
        #: Plain sockets only: a TLS close is gunicorn's own (it has to send close_notify).
        self.linger = None if self.cfg.is_ssl else Linger()
        self.idle_closed = 0  # connections closed silent to make room (logged, for tests)

    def run(self) -> None:
        """gunicorn's loop; then what still lingers is given its time before the process ends
        (the linger thread dies with it)."""
        super().run()
        if self.linger is not None:
            self.linger.finish(LINGER_ON_STOP_S)

    def accept(self, listener: Any) -> None:
        """A new connection waits for its first byte in the poller, not on a thread.

        It joins gunicorn's pending connections: readable, it goes to a thread with its data
        ready; silent for the read timeout, gunicorn's loop closes it (``murder_pending``).
        Every pending connection gets the same timeout from when it was added, so the queue
        stays in the order it expires in, as ``murder_pending`` expects. At the connection
        limit the oldest silent one is closed now (``_make_room``).
        """
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = Conn(self.cfg, client_sock, client_addr, listener.getsockname())
        conn.linger = self.linger
        conn.timeout = time.monotonic() + self.read_timeout_s
        self.pending_conns.append(conn)
        self.poller.register(
            client_sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn)
        )
        self._make_room()

    def _make_room(self) -> None:
        """Below the connection limit again by closing the oldest silent connections, so
        gunicorn never stops accepting for want of room (the newest silent one is the likeliest
        to be a delivery about to send its request)."""
        while self.nr_conns >= self.worker_connections and len(self.pending_conns) > 1:
            conn = self.pending_conns.popleft()
            self.poller.unregister(conn.sock)
            self.nr_conns -= 1
            self.idle_closed += 1
            conn.close()
            LOG.info("closed a connection that sent nothing: the worker is at its limit")

    def _cap_keepalive(self, deadline: float) -> None:
        """A stopping worker keeps a silent new connection no longer than a kept-alive one."""
        super()._cap_keepalive(deadline)
        for conn in self.pending_conns:  # all capped alike: the queue keeps its order
            conn.timeout = min(conn.timeout, deadline)

    def handle(self, conn: Any) -> Any:
        """Read (and answer) the connection's next request under fresh deadlines."""
        if not conn.initialized and not self.cfg.is_ssl:
            conn.sock = DeadlineSocket(conn.sock, write_timeout_s=self.read_timeout_s)
        sock = conn.sock
        if isinstance(sock, DeadlineSocket):
            sock.arm(self.read_timeout_s)
        try:
            return super().handle(conn)
        finally:
            if isinstance(sock, DeadlineSocket):
                sock.disarm()

    def handle_request(self, req: Any, conn: Any) -> Any:
        """The app's turn; gunicorn then drains an unread body, within the same deadline."""
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
