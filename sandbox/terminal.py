"""``make up``'s terminal: its output, what happens when nobody reads it, and Ctrl-C.

Outside check 9 (issue 23).

``make up 2>&1 | tee log``, then Ctrl-C: the terminal's SIGINT reaches ``tee`` too, so the pipe
has no reader by the time honcho prints "SIGINT received". Python ignores SIGPIPE, so that
print raised ``BrokenPipeError`` inside honcho's signal handler: its loop ended before it
stopped a single process, and the exit then waited for ever on honcho's helpers (each waits for
its process). A reader that goes away is the user leaving, as Ctrl-C is, so ``Output``:

- never lets a write fail the caller: on a broken stream the text is dropped, from then on
  the stream's descriptor (and stderr's, when it is the same pipe) points at ``/dev/null`` so
  no later write or exit flush fails either;
- calls ``on_gone`` once (``make up`` sends itself SIGTERM: the same stop as Ctrl-C), whether a
  write found the stream broken or ``watch`` did: ``poll`` reports ``POLLERR`` on a pipe whose
  reader closed and ``POLLHUP`` on a terminal that hung up, without anything written, so an
  idle ``make up`` stops as soon as its reader is gone.

``Manager`` and ``Helper`` are honcho's, made safe against a Ctrl-C that arrives while the
processes are still starting (see each).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import honcho.manager
import honcho.printer
from honcho.process import Process

#: What ``poll`` reports for a stream whose other end is gone (always reported, never asked).
_GONE = select.POLLERR | select.POLLHUP


class Output:
    """A text stream for honcho's printer and ``make up``'s own lines that survives its reader."""

    def __init__(self, stream: TextIO, on_gone: Callable[[], None]) -> None:
        self._stream = stream
        self._on_gone = on_gone
        self._gone = threading.Lock()  # held once the stream is gone

    @property
    def gone(self) -> bool:
        """Whether the stream's reader went away."""
        return self._gone.locked()

    def write(self, text: str) -> int:
        """Write ``text``; when the stream is broken, drop it and stop (see the module)."""
        if not self.gone:
            self._guarded(lambda: self._stream.write(text))
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            self._guarded(self._stream.flush)

    def isatty(self) -> bool:
        """For honcho's colours."""
        return not self.gone and self._stream.isatty()

    def _guarded(self, call: Callable[[], object]) -> None:
        try:
            call()
        except RuntimeError:
            # A signal handler's print while the interrupted code was printing: the buffer
            # refuses the reentrant call; losing a line beats ending honcho's loop.
            return
        except (OSError, ValueError):
            self.went_away()

    def went_away(self) -> None:
        """The reader is gone: silence the stream and call ``on_gone``, once."""
        if not self._gone.acquire(blocking=False):
            return
        with contextlib.suppress(OSError, ValueError):
            _to_devnull(self._stream.fileno())
        self._on_gone()

    def watch(self) -> threading.Thread:
        """Start a thread that calls ``went_away`` when ``poll`` says the reader is gone."""
        thread = threading.Thread(target=self._watch, name="output-watch", daemon=True)
        thread.start()
        return thread

    def _watch(self) -> None:
        try:
            poller = select.poll()
            poller.register(self._stream.fileno(), 0)  # no events asked: errors only
        except (OSError, ValueError):
            return  # not a file descriptor: a write finds out instead
        while not self.gone:
            events = [found for _, found in poller.poll()]
            if any(found & select.POLLNVAL for found in events):
                return  # the descriptor was closed under us: nothing left to watch
            if any(found & _GONE for found in events):
                self.went_away()


def _to_devnull(fd: int) -> None:
    """Point ``fd`` at /dev/null, and stderr too when it was the same file (``2>&1``)."""
    same = [fd]
    with contextlib.suppress(OSError, ValueError):
        err = sys.__stderr__.fileno() if sys.__stderr__ is not None else -1
        if err not in (-1, fd) and os.path.samestat(os.fstat(fd), os.fstat(err)):
            same.append(err)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for target in same:
            os.dup2(devnull, target)
    finally:
        os.close(devnull)


class Helper(Process):  # type: ignore[misc]
    """honcho's helper process (one per Procfile entry, spawned by ``make up``), deaf to Ctrl-C
    from its first instruction.

    The terminal signals ``make up``'s whole process group, helpers included; a helper that
    took the SIGINT while still starting died without reporting its process, and honcho's loop
    waited for that report for ever. ``Manager`` spawns helpers with SIGINT blocked (the mask
    survives the spawn), and a helper ignores it before unblocking it, so a pending one is
    dropped. ``make up`` stops the processes itself, with SIGTERM.
    """

    def run(self, events: Any = None, ignore_signals: bool = False) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        super().run(events, ignore_signals)


#: How long a process may finish the work in hand after SIGTERM before SIGKILL: Kubernetes'
#: default ``terminationGracePeriodSeconds``, the chart's too (honcho's own is 5 s, which a
#: loaded machine overran: rq's warm shutdown of the dispatcher was SIGKILLed mid-way).
GRACE_S = 30.0


class Manager(honcho.manager.Manager):  # type: ignore[misc]
    """honcho's manager for ``make up``: helpers are ``Helper``s spawned with SIGINT blocked,
    and a stop asked before a process reported its pid (Ctrl-C while starting) skips it rather
    than failing on the missing pid in the signal handler; honcho kills it once it reports.
    SIGKILL comes ``grace`` seconds after the first process stopped, not honcho's 5."""

    def __init__(
        self,
        output: Output,
        grace: float = GRACE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(printer=honcho.printer.Printer(output))
        self._process_ctor = Helper
        self._grace = grace
        self._clock_s = clock
        self._kill_from: float | None = None

    def kill(self) -> None:
        """honcho's loop calls this on every turn from ``KILL_WAIT`` seconds after the first
        process stopped; the SIGKILL waits until ``grace`` seconds have passed since then."""
        now = self._clock_s()
        if self._kill_from is None:
            self._kill_from = now + max(0.0, self._grace - honcho.manager.KILL_WAIT)
        if now >= self._kill_from:
            super().kill()

    def _start(self) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            super()._start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _killall(self, force: bool = False) -> None:
        signame = "SIGKILL" if force else "SIGTERM"
        for name, process in self._processes.items():
            if "returncode" in process or "pid" not in process:
                continue
            self._system_print(f"sending {signame} to {name} (pid {process['pid']})\n")
            stop = self._procmgr.kill if force else self._procmgr.terminate
            stop(process["pid"])
