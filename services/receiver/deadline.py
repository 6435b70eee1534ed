"""Deadlines for a whole request and a whole answer: neither may take longer than a bound (C5).

gunicorn's threaded worker reads a request and writes its answer on a blocking socket with no
timeout, so a client that sends one byte at a time (slowloris), or that pipelines requests and
never reads the answers, holds a thread for as long as it likes. The worker
(``services.receiver.worker``) hands gunicorn's parser a ``DeadlineSocket`` instead: each
``recv`` waits at most what is left of the request's budget, counted from the first read, and
past it raises ``SlowClient``. The app answers that 408 when it happens in the body
(``services.receiver.body``), the worker when it happens in the headers. Each ``sendall`` has a
budget of its own; a client that does not take the answer within it is treated as gone
(``SlowReader``, a ``BrokenPipeError``, which gunicorn takes as "close the connection").

No gunicorn import here: this is plain sockets, unit-tested over a socket pair.
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import Callable
from typing import Any


class SlowClient(Exception):
    """The request did not arrive within its read deadline (answered 408, then closed)."""


class SlowReader(BrokenPipeError):
    """The client did not read its answer within the write deadline: the connection is cut.

    A ``BrokenPipeError`` (EPIPE), because that is what gunicorn treats as a client gone
    without logging a traceback, and what it is: nobody reads at the other end."""


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

    __slots__ = ("_budget", "_clock", "_deadline", "_error", "_sock", "_write_s")

    def __init__(
        self,
        sock: socket.socket,
        clock: Callable[[], float] = time.monotonic,
        write_timeout_s: float | None = None,
    ) -> None:
        self._sock = sock
        self._clock = clock
        self._budget: float | None = None
        self._deadline: float | None = None
        self._error: type[Exception] = SlowClient
        self._write_s = write_timeout_s  # None: writes wait as long as the socket lets them

    def arm(self, budget_s: float) -> None:
        """A new request may take ``budget_s`` seconds from its first byte read."""
        self._budget = budget_s
        self._deadline = None
        self._error = SlowClient

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
            if remaining <= 0:
                raise self._error(f"the request took over {self._budget:g} s to arrive")
            self._sock.settimeout(remaining)
            try:
                return self._sock.recv(size)
            except TimeoutError as err:
                raise self._error(f"the request took over {self._budget:g} s to arrive") from err
            finally:
                self._sock.settimeout(None)  # blocking again, as gunicorn left it
        return self._sock.recv(size)

    def sendall(self, data: bytes) -> None:
        """Write all of ``data`` within the write deadline, or raise ``SlowReader``.

        Kept off ``__getattr__``: every answer goes through here. The deadline covers the whole
        call, not each ``send``: a client reading a byte now and then cannot stretch it."""
        if self._write_s is None:
            self._sock.sendall(data)
            return
        deadline = self._clock() + self._write_s
        view = memoryview(data)
        try:
            while view:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise TimeoutError
                self._sock.settimeout(remaining)
                view = view[self._sock.send(view) :]
        except TimeoutError as err:
            raise SlowReader(
                errno.EPIPE, f"the client did not read its answer within {self._write_s:g} s"
            ) from err
        finally:
            self._sock.settimeout(None)

    def shutdown(self, how: int) -> None:
        """Our side is done (gunicorn's graceful close sends FIN, then drains for the client's
        close): from here reads are that linger's, on the timeout it sets itself (2 s), not
        the rest of the request's budget, which held the thread up to the read timeout."""
        self.disarm()
        self._sock.shutdown(how)

    @property
    def raw(self) -> socket.socket:
        """The socket itself (to peek at, or to hand over for closing)."""
        return self._sock

    def fileno(self) -> int:
        return self._sock.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)
