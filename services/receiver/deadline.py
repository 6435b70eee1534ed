"""A read deadline for a whole request: headers and body must arrive within a bound (C5).

gunicorn's threaded worker reads a request on a blocking socket with no timeout, so a client
that sends one byte at a time holds a thread for as long as it likes (slowloris). The worker
(``services.receiver.worker``) hands gunicorn's parser a ``DeadlineSocket`` instead: each
``recv`` waits at most what is left of the request's budget, counted from the first read, and
past it raises ``SlowClient``. The app answers that 408 when it happens in the body
(``services.receiver.body``), the worker when it happens in the headers.

No gunicorn import here: this is plain sockets, unit-tested over a socket pair.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from typing import Any


class SlowClient(Exception):
    """The request did not arrive within its read deadline (answered 408, then closed)."""


class DeadlineSocket:
    """A socket whose reads share one deadline per request; everything else is the socket's.

    ``arm(budget)`` starts a request: the clock starts at its first ``recv`` (a connection
    waiting for its first byte is gunicorn's to time out, in its poller, without a thread).
    ``draining()``: the app has answered and gunicorn reads what is left of the body to reuse
    the connection; the same deadline holds, but running out of it is a plain ``TimeoutError``,
    which gunicorn's drain takes as "close the connection" (its own bound is checked only
    between reads of 1 KiB, which a client sending a byte at a time stretches for minutes).
    ``disarm()`` ends it: reads are the socket's own again.
    """

    __slots__ = ("_budget", "_clock", "_deadline", "_error", "_sock", "_waits_only")

    def __init__(self, sock: socket.socket, clock: Callable[[], float] = time.monotonic) -> None:
        self._sock = sock
        self._clock = clock
        self._budget: float | None = None
        self._deadline: float | None = None
        self._error: type[Exception] = SlowClient
        self._waits_only = False

    def arm(self, budget_s: float, waits_only: bool = False) -> None:
        """A new request may take ``budget_s`` seconds from its first byte read.

        ``waits_only``: the request was judged whole in the socket's buffer, so what it takes
        the app between reads does not count: a read that finds bytes waiting returns them
        whenever it comes, and only a read that has to wait is held to the deadline."""
        self._budget = budget_s
        self._deadline = None
        self._error = SlowClient
        self._waits_only = waits_only

    def draining(self) -> None:
        """The answer is sent: what is read now is an unread body being thrown away."""
        self._error = TimeoutError

    def disarm(self) -> None:
        """The request is read (or answered): reads are the socket's own again."""
        self._budget = None
        self._deadline = None

    def recv(self, size: int) -> bytes:
        """At most ``size`` bytes, waiting no longer than the request's deadline allows."""
        if self._budget is not None:
            now = self._clock()
            if self._deadline is None:
                self._deadline = now + self._budget
            remaining = self._deadline - now
            if self._waits_only:  # what is there is read; nothing there is a wait, as below
                with contextlib.suppress(BlockingIOError):
                    return self._sock.recv(size, socket.MSG_DONTWAIT)
            if remaining <= 0:
                raise self._error(f"the request took over {self._budget:g} s to arrive")
            self._sock.settimeout(remaining)
            try:
                return self._sock.recv(size)
            except TimeoutError as err:
                raise self._error(f"the request took over {self._budget:g} s to arrive") from err
            finally:
                self._sock.settimeout(None)  # writing the answer is gunicorn's, as before
        return self._sock.recv(size)

    def sendall(self, data: bytes) -> None:
        """Write ``data`` (kept off ``__getattr__``: every answer goes through here)."""
        self._sock.sendall(data)

    @property
    def raw(self) -> socket.socket:
        """The socket itself (to peek at, or to hand over for closing)."""
        return self._sock

    def fileno(self) -> int:
        return self._sock.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)
