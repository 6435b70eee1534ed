"""C9: a branch worker rides out a Redis outage (and Redis coming back empty) without exiting,
then takes its branches again and mirrors what arrives."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.integration.branch_worker.site import DEADLINE_S, Running, Site, settings_for
from tests.integration.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.integration
__all__ = ["redis_server"]  # the fixture, imported for pytest


def test_the_worker_rides_out_an_outage_and_an_empty_restart(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """Fails before C9: the first Redis error in a round ended ``run`` with a traceback."""
    settings = settings_for(
        tmp_path, "c9", redis_url=redis_server.url, lease_period=timedelta(seconds=3)
    )
    site = Site(tmp_path, redis_server.client(), "c9", settings)
    site.branch("r")
    site.edit("r", "before")
    running = Running(site.worker("w1", time.time))
    with running as worker:
        wait_until(lambda: "[CREATE] v1/configmaps/before" in site.pushed("r"), DEADLINE_S, "push")
        redis_server.stop()
        assert worker.outage.wait(DEADLINE_S), "the worker saw Redis go"
        assert running.thread is not None and running.thread.is_alive()
        redis_server.start()  # back, and empty
        site.publish("r")  # the watcher republishes what Redis lost (C8)
        site.edit("r", "after")
        wait_until(lambda: "[CREATE] v1/configmaps/after" in site.pushed("r"), DEADLINE_S, "push")
        assert running.thread.is_alive()
    assert site.pushed("r").count("[CREATE] v1/configmaps/before") == 1, "nothing pushed twice"


def test_a_worker_stopped_while_redis_is_away_ends_without_an_error(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """C9 at shutdown: a stop (SIGTERM) that comes during an outage ends ``run`` cleanly; the
    leases expire on their own. Failed before (checked): giving the branch back and leaving the
    worker registry went to Redis unguarded, so ``run`` ended with a ConnectionError (a
    traceback and exit status 1 for the process)."""
    settings = settings_for(
        tmp_path, "c9stop", redis_url=redis_server.url, lease_period=timedelta(seconds=30)
    )
    site = Site(tmp_path, redis_server.client(), "c9stop", settings)
    site.branch("r")
    site.edit("r", "before")
    worker = site.worker("w1", time.time)
    stop = threading.Event()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            worker.run(stop)
        except BaseException as err:  # handed to the test
            raised.append(err)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: "[CREATE] v1/configmaps/before" in site.pushed("r"), DEADLINE_S, "push")
        assert worker.loops, "the worker holds the branch"
        redis_server.stop()
        assert worker.outage.wait(DEADLINE_S), "the worker saw Redis go"
    finally:
        stop.set()
        thread.join(DEADLINE_S)
    assert not thread.is_alive(), "the worker stopped"
    assert raised == [], raised


def test_a_worker_started_while_redis_is_away_waits_for_it(
    tmp_path: Path, redis_server: RedisServer
) -> None:
    """C9 at start: the soak started a worker while Redis was loading its AOF after a kill;
    its first heartbeat raised (``BusyLoadingError``) and the process exited, so no branch had
    an owner again. Started with Redis away, the worker now waits, then works."""
    settings = settings_for(
        tmp_path, "c9s", redis_url=redis_server.url, lease_period=timedelta(seconds=3)
    )
    site = Site(tmp_path, redis_server.client(), "c9s", settings)
    site.branch("r")
    redis_server.stop()
    running = Running(site.worker("w1", time.time))
    with running as worker:
        assert worker.outage.wait(DEADLINE_S), "the worker saw Redis away"
        assert running.thread is not None and running.thread.is_alive()
        redis_server.start()
        site.publish("r")  # the watcher republishes what Redis lost (C8)
        site.edit("r", "after")
        wait_until(lambda: "[CREATE] v1/configmaps/after" in site.pushed("r"), DEADLINE_S, "push")
        assert running.thread.is_alive()
