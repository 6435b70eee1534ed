"""When the receiver's worker answers a request on its own loop thread, and when it sheds one.

gunicorn's threaded worker hands every request from its poller thread to a pool thread and
back: two wake-ups and two GIL hand-overs per request, which a request that arrives alone pays
in full (measured in bench/receiver.py: 680-800 us of worker CPU per delivery at half load,
against about 480 us in a saturated round). And a kept-alive connection stays on the worker
process that accepted it: a client (a proxy's connection pool, the benchmark's generator) that
sends most requests over two or three connections can load one process (one GIL) with all of
them while its sibling idles.

``services.receiver.worker.ReceiverWorker`` therefore

- answers a request on the poller thread itself when the whole of it is already in the
  socket's buffer (``complete_request``: a delivery's head, and the body its
  ``Content-Length`` names, HTTP/1 only, no chunked body) and its small answer can be written
  at once (the socket is writable), so nothing waits on the client; anything else goes to a
  pool thread as before (a slow client, a large body, a chunked one, a pipelined read-ahead,
  any other route);
- stops doing so for a while after an inline request took long (``InlinePolicy.served``): the
  app waits on Redis and, on a token cache miss, the Kubernetes API, and a loop thread stuck
  on a stalled Redis would hold every connection of the worker; the pool then serves as before;
- asks a client to reconnect (``Connection: close`` on the answer) when other requests were
  waiting while it answered and a sibling worker is keeping up (``InlinePolicy.shed``, at most
  one connection per ``SHED_EVERY_S``; the workers post whether they keep up on a ``Board``
  they share): the client's next connection is accepted by whichever worker is waiting in its
  poller, and a worker busy answering is not; so a load that happened to sit on one worker
  spreads to an idle sibling within milliseconds, while a pod whose workers are all busy sheds
  nothing (a reconnection there would only cost CPU).

No gunicorn import here: plain bytes and a clock, unit-tested without a server.
"""

from __future__ import annotations

import mmap
import re
import struct
import time
from collections.abc import Callable

#: The most a request may take, head and body, to be answered on the loop thread (bytes
#: peeked at once); a larger one goes to a pool thread. A GitHub push is 2-30 KiB.
PEEK_BYTES = 65536
#: An inline request that took longer than this (the app waited on Redis or the API) pauses
#: inline answering.
SLOW_S = 0.02
#: The pause: this many times what the slow request took, and at least PAUSE_MIN_S; a loop
#: thread stalled by a dead Redis (2 s timeout, one retry) then stalls under a tenth of the time.
PAUSE_FACTOR = 10.0
PAUSE_MIN_S = 1.0
#: At most one connection is shed per this interval.
SHED_EVERY_S = 0.01
#: A read on the loop thread that has to wait (the request was judged complete and was not)
#: gets what is left of this, counted from the first read (a read that finds bytes waiting
#: always gets them: ``DeadlineSocket.arm(waits_only=True)``); past it, the request is
#: answered 408 and inline answering pauses.
READ_BUDGET_S = 0.05

#: What is answered inline: a delivery (the one request served in bulk, whose answer is a few
#: hundred bytes of JSON). ``/healthz``, ``/metrics`` and the rest always go to a thread.
_DELIVERY = re.compile(rb"POST /hook/[^ \r\n]* HTTP/1\.[01]\r\n")
_LENGTH = re.compile(rb"\r\ncontent-length:[ \t]*([0-9]{1,9})[ \t]*(?=\r\n)", re.IGNORECASE)
_CODING = re.compile(rb"\r\ntransfer-encoding:", re.IGNORECASE)


def complete_request(data: bytes) -> bool:
    """Whether ``data`` (the start of what a connection has buffered) holds one whole HTTP/1
    delivery that gunicorn's parser reads without waiting: a ``POST /hook/...`` request line,
    the head up to its blank line, and the body its single ``Content-Length`` names.

    When in doubt, no: a chunked body, two ``Content-Length`` headers, a head without a
    request line (an HTTP/2 preface, TLS), or more than the buffer shows all go to a pool
    thread, which waits for the rest as gunicorn always has.
    """
    if not _DELIVERY.match(data):
        return False
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = data[: end + 2]  # the last header line keeps its CRLF for the patterns
    if _CODING.search(head):
        return False
    lengths = _LENGTH.findall(head)
    if len(lengths) > 1 or head.lower().count(b"\r\ncontent-length") != len(lengths):
        return False  # two, or one the pattern does not read: gunicorn judges it in a thread
    body = int(lengths[0]) if lengths else 0
    return len(data) >= end + 4 + body


class InlinePolicy:
    """Whether the loop thread may answer now, and whether to shed the connection it answers.

    Owned by one worker's loop thread; ``clock`` is injected for the tests.
    """

    __slots__ = ("_clock", "_last_shed", "_paused_until")

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._paused_until = float("-inf")
        self._last_shed = float("-inf")

    def now(self) -> float:
        """The policy's clock: an inline request is timed by it (``served``)."""
        return self._clock()

    def allowed(self) -> bool:
        """Whether a request may be answered on the loop thread now (not paused)."""
        return self._clock() >= self._paused_until

    def served(self, started: float) -> tuple[float, float] | None:
        """An inline request that began at ``started`` is answered: if it was slow, what it
        took and the pause it starts, in seconds."""
        now = self._clock()
        took = now - started
        if took <= SLOW_S:
            return None
        pause = max(PAUSE_MIN_S, PAUSE_FACTOR * took)
        self._paused_until = now + pause
        return took, pause

    def shed(self, waiting: int, sibling_keeps_up: Callable[[], bool]) -> bool:
        """Whether the answer being written should close its connection: ``waiting`` other
        requests were ready when it began, none was shed in the last ``SHED_EVERY_S``, and a
        sibling keeps up (asked last: it reads shared memory)."""
        if waiting <= 0:
            return False
        now = self._clock()
        if now - self._last_shed < SHED_EVERY_S or not sibling_keeps_up():
            return False
        self._last_shed = now
        return True


#: A worker's post on the board: the clock when it last polled keeping up (no other request
#: waiting), or 0.0 when its last poll found it behind (and in a post no worker has used).
_POST = struct.Struct("=d")
#: Posts on a board; a worker's is its gunicorn age modulo this (ages are unique and only a
#: few workers are alive at once, so two live workers sharing a post is a restart 64 apart).
SLOTS = 64
#: A post older than this is a worker gone (an idle worker polls at least once a second).
FRESH_S = 2.0


class Board:
    """Whether each worker of a pod keeps up, in memory they all share.

    Created in gunicorn's master before it forks (an anonymous shared mapping, inherited by
    every worker): each worker posts after every poll, and reads its siblings' posts when it
    considers shedding a connection. Eight aligned bytes a post, written and read without a
    lock: at worst one wrong guess, after which the next poll posts again.
    """

    def __init__(self, memory: mmap.mmap | None = None) -> None:
        self._memory = memory if memory is not None else mmap.mmap(-1, SLOTS * _POST.size)

    def post(self, slot: int, keeping_up: bool, now: float) -> None:
        """The worker at ``slot`` polled at ``now``, with nothing else waiting or not."""
        _POST.pack_into(self._memory, (slot % SLOTS) * _POST.size, now if keeping_up else 0.0)

    def sibling_keeps_up(self, slot: int, now: float) -> bool:
        """Whether another live worker posted, within FRESH_S, that it keeps up."""
        mine = slot % SLOTS
        for other in range(SLOTS):
            if other == mine:
                continue
            (at,) = _POST.unpack_from(self._memory, other * _POST.size)
            if at and now - at < FRESH_S:
                return True
        return False
