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

Everything else (keep-alive, the poller that holds kept-alive connections) is gunicorn's
``ThreadWorker``. Set as ``worker_class`` in ``gunicorn.conf.py``.
"""

from __future__ import annotations

import errno
import json
import logging
import selectors
import time
from functools import partial
from typing import Any

from gunicorn.http import errors
from gunicorn.workers.gthread import TConn, ThreadWorker

from services.receiver.deadline import DeadlineSocket, SlowClient
from shared.settings import Settings

LOG = logging.getLogger(__name__)

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
    """gunicorn's threaded worker with a per-request read deadline and JSON refusals."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_timeout_s = Settings.from_env().receiver_read_timeout.total_seconds()

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
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())
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

    def handle(self, conn: Any) -> Any:
        """Read (and answer) the connection's next request under a fresh deadline."""
        if not conn.initialized and not self.cfg.is_ssl:
            conn.sock = DeadlineSocket(conn.sock)  # before gunicorn's parser takes it
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
