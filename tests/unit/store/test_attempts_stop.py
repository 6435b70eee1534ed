"""A signal between two rq workers is a clean stop (conventions 10, C9; issue 13).

With Redis away the dispatcher's rq worker can leave its loop; ``Attempts.work`` then pauses and
starts another. rq's signal handlers are not installed in that gap, so SIGTERM there used to
kill the process (status -15, seen by ``tests/integration/health``); now any signal outside an
rq worker's loop makes ``work`` return, and the process exits 0.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
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
