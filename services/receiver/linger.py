"""Closing a connection gracefully without holding the thread that closes it.

RFC 9112 section 9.6: a server that closes after an answer half-closes first (FIN) and reads
what the client still sends until the client closes too, so that unread request bytes do not
make the kernel reset the connection and cut the answer short. gunicorn does this
(``util.close_graceful``: up to 2 s, up to 64 KiB) on the thread that closes, and its threaded
worker closes on its loop thread: a client that reads a ``Connection: close`` answer and keeps
its socket open stalls every connection of that worker for 2 s. ``Linger`` does the same
drain for every closing connection at once, on one thread of its own, with a selector.

No gunicorn import here: plain sockets, unit-tested over socket pairs.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from queue import Empty, SimpleQueue

#: What gunicorn's ``close_graceful`` allows a peer: time to close, bytes read meanwhile.
TIMEOUT_S = 2.0
MAX_DRAIN = 65536


class Linger:
    """Half-closes sockets and closes them when their peer has, or after ``timeout_s``."""

    def __init__(
        self,
        timeout_s: float = TIMEOUT_S,
        max_drain: int = MAX_DRAIN,
        clock: Callable[[], float] = time.monotonic,
        closed: Callable[[socket.socket], None] | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._max_drain = max_drain
        self._clock = clock
        self._closed = closed  # told of every socket closed, for the tests
        self._incoming: SimpleQueue[socket.socket] = SimpleQueue()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def close(self, sock: socket.socket) -> None:
        """Send FIN now; the rest (drain, close) happens on the linger thread."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
        except OSError:  # already reset or gone: nothing to linger on
            self._close(sock)
            return
        self._incoming.put(sock)
        self._start()
        with contextlib.suppress(BlockingIOError):  # the pipe is full of wake-ups already
            os.write(self._wake_w, b"\0")

    def _start(self) -> None:
        with self._lock:  # started in the worker process, at its first close (not pre-fork)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="linger", daemon=True)
                self._thread.start()

    def _close(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.close()
        if self._closed is not None:
            self._closed(sock)

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        deadlines: list[tuple[float, int, socket.socket]] = []  # (deadline, order, socket)
        drained: dict[socket.socket, int] = {}
        order = itertools.count()
        while True:
            timeout = None if not deadlines else max(0.0, deadlines[0][0] - self._clock())
            for key, _ in selector.select(timeout):
                if key.fileobj == self._wake_r:
                    self._take(selector, deadlines, drained, order)
                    continue
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                if sock in drained and self._drain(sock, drained):
                    selector.unregister(sock)
                    del drained[sock]
                    self._close(sock)
            now = self._clock()
            while deadlines and deadlines[0][0] <= now:
                _, _, sock = heapq.heappop(deadlines)
                if sock in drained:
                    selector.unregister(sock)
                    del drained[sock]
                    self._close(sock)

    def _take(
        self,
        selector: selectors.BaseSelector,
        deadlines: list[tuple[float, int, socket.socket]],
        drained: dict[socket.socket, int],
        order: itertools.count[int],
    ) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                sock = self._incoming.get_nowait()
            except Empty:
                return
            selector.register(sock, selectors.EVENT_READ)
            drained[sock] = 0
            heapq.heappush(deadlines, (self._clock() + self._timeout_s, next(order), sock))

    def _drain(self, sock: socket.socket, drained: dict[socket.socket, int]) -> bool:
        """Read what is there; whether the socket is done with (peer closed, error, cap)."""
        while True:
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not data:
                return True
            drained[sock] += len(data)
            if drained[sock] >= self._max_drain:
                return True
