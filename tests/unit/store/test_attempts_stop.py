"""A signal between two rq workers is a clean stop (conventions 10, C9; issue 13).

With Redis away the dispatcher's rq worker can leave its loop; ``Attempts.work`` then pauses and
starts another. rq's signal handlers are not installed in that gap, so SIGTERM there used to
kill the process (status -15, seen by ``tests/integration/health``); now any signal outside an
rq worker's loop makes ``work`` return, and the process exits 0.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import NoReturn

import fakeredis
import pytest
import redis

from shared.store import attempts
from shared.store.attempts import Attempts
from shared.store.keys import Keys


def _exit_now(signum: int) -> NoReturn:
    raise AssertionError(f"exit at once on signal {signum}: only one signal was sent")


@pytest.fixture
def handlers() -> Iterator[None]:
    """Harmless SIGTERM and SIGINT handlers for the test (a signal nobody turns into a stop
    is ignored, so the loop goes on and the test fails instead of the test process dying);
    the test process's own are put back after."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for signum in saved:
        signal.signal(signum, lambda s, f: None)
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_outage_pause_stops_work_cleanly(
    monkeypatch: pytest.MonkeyPatch, handlers: None, signum: int
) -> None:
    started: list[int] = []

    def rq_work(self: object, burst: bool, logging_level: str) -> None:
        started.append(1)
        if len(started) > 1:
            raise AssertionError("another rq worker started after the signal")
        raise redis.ConnectionError("Redis went away")  # rq left its loop

    def pause(self: threading.Event, timeout: float | None = None) -> bool:
        os.kill(os.getpid(), signum)  # the signal arrives while the process pauses
        return False

    monkeypatch.setattr(attempts._InProcessWorker, "work", rq_work)
    monkeypatch.setattr(threading.Event, "wait", pause)
    client = fakeredis.FakeRedis(decode_responses=True)
    Attempts(client, Keys("test:stop"), "apply-attempts").work(False, "INFO", _exit_now)
    assert started == [1]


class _SignalWhileLogging(logging.StreamHandler):  # type: ignore[type-arg]
    """A log handler that receives SIGTERM while it writes rq's "Listening on": the stop the
    signal handler raises happens inside ``emit``, which swallows it ("Logging error")."""

    def flush(self) -> None:
        super().flush()
        if self.signalled is False and "Listening on" in self.last:
            self.signalled = True
            os.kill(os.getpid(), signal.SIGTERM)

    def emit(self, record: logging.LogRecord) -> None:
        self.last = record.getMessage()
        super().emit(record)

    signalled = False
    last = ""


def test_a_signal_swallowed_by_logging_as_rq_starts_still_stops_it(
    monkeypatch: pytest.MonkeyPatch, handlers: None
) -> None:
    """rq logs "Listening on" just before it installs its handlers; a SIGTERM then raises
    inside logging, which swallows it. The flag the signal set makes the worker stop once
    its handlers are in, before it waits on the queue (where it stayed until killed)."""
    dequeued: list[int] = []

    def dequeue(self: object, *args: object, **kwargs: object) -> None:
        dequeued.append(1)
        raise SystemExit("the worker went on to wait on the queue")

    monkeypatch.setattr(attempts._InProcessWorker, "dequeue_job_and_maintain_ttl", dequeue)
    catcher = _SignalWhileLogging(io.StringIO())
    rq_log = logging.getLogger("rq.worker")
    rq_log.addHandler(catcher)
    try:
        client = fakeredis.FakeRedis()
        Attempts(client, Keys("test:stop"), "apply-attempts").work(False, "INFO", _exit_now)
    finally:
        rq_log.removeHandler(catcher)
    assert catcher.signalled
    assert dequeued == []


def test_redis_away_while_the_next_rq_worker_is_made_is_ridden_out(
    monkeypatch: pytest.MonkeyPatch, handlers: None
) -> None:
    """C9: rq's worker names its connection when it is made; with Redis still away (a
    failover not finished) that raised out of ``work`` and the dispatcher exited (the
    failover tier). Now it is one more outage: pause, and make the worker again."""
    made: list[int] = []
    real_init = attempts._InProcessWorker.__init__

    def init(self: attempts._InProcessWorker, *args: object, **kwargs: object) -> None:
        made.append(1)
        if len(made) == 1:
            raise redis.ConnectionError("No master found for 'gr-primary'")
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    def pause(self: threading.Event, timeout: float | None = None) -> bool:
        return False  # the outage pause, without the wait

    def rq_work(self: attempts._InProcessWorker, burst: bool, logging_level: str) -> None:
        self._shutdown_requested_date = datetime.now(UTC)  # worked, then a warm stop

    monkeypatch.setattr(attempts._InProcessWorker, "__init__", init)
    monkeypatch.setattr(attempts._InProcessWorker, "work", rq_work)
    monkeypatch.setattr(threading.Event, "wait", pause)
    client = fakeredis.FakeRedis()
    Attempts(client, Keys("test:stop"), "apply-attempts").work(False, "INFO", _exit_now)
    assert made == [1, 1]  # made again after the outage, then it ran until stopped
