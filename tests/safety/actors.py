"""Processes of the product as actors the schedule steps one interaction at a time.

Each actor (a branch worker, a dispatcher) runs the product's own code on a thread of its own,
but only one thread ever runs: the schedule hands control to an actor, which runs until its
next *yield point* (every Redis command it sends, every git call, every applier call) and hands
control back. So a schedule is a deterministic interleaving of the processes at the grain of
their interactions with the world, and any actor can be crashed at any of those points: it is
resumed with ``SimCrash`` raised inside it, which no product code catches (it is a
``BaseException``), and whatever it held only in memory is gone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

#: The actor whose thread is running, per thread (None on the schedule's own thread).
_CURRENT = threading.local()
#: Longest a handoff may take before the suite calls the actor hung (a bug in the suite).
HANDOFF_TIMEOUT_S = 30.0


class SimCrash(BaseException):
    """Raised inside an actor that the schedule crashed (a SIGKILL at that point)."""


class Hung(AssertionError):
    """An actor did not hand control back: it blocked outside a yield point."""


def yield_point(what: str) -> None:
    """Hand control back to the schedule (no-op on the schedule's own thread)."""
    actor: Actor | None = getattr(_CURRENT, "actor", None)
    if actor is not None and not actor.crashed:
        actor.pause(what)


class Actor:
    """One process: runs one job at a time, one interaction per ``step``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._go = threading.Semaphore(0)
        self._back = threading.Semaphore(0)
        self._thread: threading.Thread | None = None
        self._doomed = False
        #: Set once SimCrash was raised: the thread only unwinds (finalisers may still send).
        self.crashed = False
        self.error: BaseException | None = None
        self.at = ""  # the yield point the job waits at

    @property
    def running(self) -> bool:
        """A job started and not finished."""
        return self._thread is not None

    def start(self, job: Callable[[], None]) -> None:
        """Begin a job; it runs on the next ``step``."""
        assert self._thread is None
        self._doomed = False
        self.crashed = False
        self._thread = threading.Thread(target=self._run, args=(job,), daemon=True)
        self._thread.start()

    def _run(self, job: Callable[[], None]) -> None:
        _CURRENT.actor = self
        self._go.acquire()
        try:
            if self._doomed:
                self.crashed = True
                raise SimCrash
            job()
        except SimCrash:
            pass
        except BaseException as err:
            self.error = err
        finally:
            self._thread = None
            self.at = ""
            self._back.release()

    def pause(self, what: str) -> None:
        """Called on the actor's thread at a yield point."""
        self.at = what
        self._back.release()
        self._go.acquire()
        if self._doomed:
            self.crashed = True
            raise SimCrash

    def step(self) -> None:
        """Run the job until its next yield point (or its end)."""
        assert self._thread is not None
        self._go.release()
        if not self._back.acquire(timeout=HANDOFF_TIMEOUT_S):
            raise Hung(f"{self.name} did not yield (at {self.at!r})")
        if self.error is not None:
            err, self.error = self.error, None
            raise err

    def crash(self) -> None:
        """Kill the job where it stands."""
        if self._thread is not None:
            self._doomed = True
            self.step()

    def finish(self, limit: int = 10_000) -> None:
        """Run the job to its end (at most ``limit`` interactions)."""
        for _ in range(limit):
            if self._thread is None:
                return
            self.step()
        raise Hung(f"{self.name} ran {limit} interactions without finishing (at {self.at!r})")
