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
    """Half-closes sockets and closes them when their peer has, or after ``timeout_s``.

    Nothing is opened until the first close (gunicorn builds its worker objects in the master,
    before it forks): then a wake-up pipe and a daemon thread, in the worker. ``finish`` waits
    for what still lingers when the worker stops.
    """

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
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Condition()
        self._lingering = 0  # handed over and not closed yet

    def close(self, sock: socket.socket) -> None:
        """Send FIN now; the rest (drain, close) happens on the linger thread. Never raises:
        whatever goes wrong, the socket is closed."""
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
            wake = self._start()
        except Exception:  # already reset or gone, or no thread to be had: close at once
            self._close(sock)
            return
        with self._lock:
            self._lingering += 1
        self._incoming.put(sock)
        with contextlib.suppress(OSError):  # full of wake-ups already
            os.write(wake, b"\0")

    def finish(self, within_s: float) -> bool:
        """Wait (at most ``within_s``) until nothing lingers; whether nothing does."""
        deadline = time.monotonic() + within_s
        with self._lock:
            while self._lingering:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def _start(self) -> int:
        """The write end of the wake-up pipe, the thread started (once, in this process)."""
        with self._lock:
            if self._wake is None:
                read, write = os.pipe()
                os.set_blocking(read, False)
                os.set_blocking(write, False)
                self._wake = (read, write)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, args=(self._wake[0],), name="linger", daemon=True
                )
                self._thread.start()
            return self._wake[1]

    def _close(self, sock: socket.socket, counted: bool = False) -> None:
        with contextlib.suppress(OSError):
            sock.close()
        if counted:
            with self._lock:
                self._lingering -= 1
                self._lock.notify_all()
        if self._closed is not None:
            self._closed(sock)

    def _run(self, wake: int) -> None:
        selector = selectors.DefaultSelector()
        selector.register(wake, selectors.EVENT_READ)
        deadlines: list[tuple[float, int, socket.socket]] = []  # (deadline, order, socket)
        drained: dict[socket.socket, int] = {}
        order = itertools.count()
        while True:
            timeout = None if not deadlines else max(0.0, deadlines[0][0] - self._clock())
            for key, _ in selector.select(timeout):
                if key.fileobj == wake:
                    self._take(wake, selector, deadlines, drained, order)
                    continue
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                if sock in drained and self._drain(sock, drained):
                    self._done(sock, selector, drained)
            now = self._clock()
            while deadlines and deadlines[0][0] <= now:
                _, _, sock = heapq.heappop(deadlines)
                if sock in drained:
                    self._done(sock, selector, drained)

    def _done(
        self,
        sock: socket.socket,
        selector: selectors.BaseSelector,
        drained: dict[socket.socket, int],
    ) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            selector.unregister(sock)
        del drained[sock]
        self._close(sock, counted=True)

    def _take(
        self,
        wake: int,
        selector: selectors.BaseSelector,
        deadlines: list[tuple[float, int, socket.socket]],
        drained: dict[socket.socket, int],
        order: itertools.count[int],
    ) -> None:
        with contextlib.suppress(OSError):
            while os.read(wake, 4096):
                pass
        while True:
            try:
                sock = self._incoming.get_nowait()
            except Empty:
                return
            if sock in drained:  # handed over twice: it lingers already, and is counted once
                with self._lock:
                    self._lingering -= 1
                    self._lock.notify_all()
                continue
            try:
                selector.register(sock, selectors.EVENT_READ)
            except (KeyError, ValueError, OSError):  # closed behind our back, or unusable
                self._close(sock, counted=True)
                continue
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
