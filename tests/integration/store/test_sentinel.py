"""A Sentinel set's primary, followed across a failover (``redis+sentinel://``).

A real group (``tests.integration.redis_group``: a primary, two replicas, three sentinels,
AOF on). The product's clients find the primary through the sentinels; after a kill -9 of the
primary the same client objects reach the promoted replica, and a write acknowledged with a
replica (``min_replicas=1``) before the kill is there.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.errors import REDIS_DOWN
from shared.store.health import RedisProbe
from shared.store.keys import Keys
from shared.store.receivers import receiver_client
from shared.store.streams import EventStream
from tests.integration.redis_group import (
    DEADLINE_S,
    SERVICE,
    SentinelGroup,
    sentinel_group,
    wait_for,
)
from tests.suites.store_suite import BK, _event

pytestmark = pytest.mark.integration

__all__ = ["sentinel_group"]  # the fixture, imported for pytest

KEYS = Keys("gr:test")


def _ride_out(action: object) -> int:
    """Run ``action`` until it succeeds, as a process rides out an outage (C9); returns how
    many attempts failed with what Redis-away looks like."""
    failures = 0
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            action()  # type: ignore[operator]
            return failures
        except REDIS_DOWN:
            failures += 1
            assert time.monotonic() < deadline, "the client never reached the new primary"
            time.sleep(0.1)  # a process's outage pause, shortened


def test_a_client_follows_the_primary_across_a_failover(sentinel_group: SentinelGroup) -> None:
    client = connect(sentinel_group.url(), client_name="tests", min_replicas=1)
    stream = EventStream(client, KEYS)
    before = sentinel_group.primary_port()
    stream.publish(BK, _event("before"))  # on a replica too when this returns
    failover = sentinel_group.kill_primary()
    assert failover.old_port == before and failover.new_port != before
    _ride_out(lambda: stream.publish(BK, _event("after")))
    assert client.connection_pool.get_master_address()[1] == failover.new_port
    entries = client.xrange(KEYS.branch_events(BK))
    names = [next(n for n in ("before", "after") if n in str(fields)) for _, fields in entries]
    assert names == ["before", "after"]  # the acknowledged write survived the failover


def test_rq_the_probe_and_the_receiver_use_the_sentinel_primary(
    sentinel_group: SentinelGroup,
) -> None:
    url = sentinel_group.url()
    attempts = Attempts(connect(url, client_name="tests"), KEYS, "apply")
    queue = attempts.queue()
    assert queue.connection.connection_pool.service_name == SERVICE
    queue.enqueue("builtins.print", "x", job_id="attempt-x")
    primary = sentinel_group.primary().client()
    assert primary.llen(queue.key) == 1  # on the server the sentinels name primary
    assert primary.wait(2, 5000) == 2  # on both replicas before the kill
    assert RedisProbe(url)() is None
    assert receiver_client(url).ping()
    sentinel_group.kill_primary()
    _ride_out(lambda: queue.enqueue("builtins.print", "y", job_id="attempt-y"))
    assert sorted(queue.job_ids) == ["attempt-x", "attempt-y"]
    wait_for("the probe to reach the new primary", lambda: RedisProbe(url)() is None)


#: An idle dispatcher's rq worker, as ``services.dispatcher`` runs it, on ``URL``.
WORKER = """
import logging, sys
logging.basicConfig(level=logging.INFO, stream=sys.stdout)
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.keys import Keys
Attempts(connect(sys.argv[1]), Keys("gr:test"), "apply").work(False, "INFO", sys.exit)
print("STOPPED", flush=True)
"""


def test_an_idle_rq_worker_on_the_primary_stops_at_sigterm(sentinel_group: SentinelGroup) -> None:
    """rq's warm shutdown raises inside its idle BLPOP; redis-py's Sentinel connection kept the
    socket with the BLPOP reply still owed, and the dispatcher hung on it instead of stopping
    (the failover tier's teardown: not stopped in 30 s). The connection is dropped now."""
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, sentinel_group.url()],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert worker.stdout is not None
        for line in worker.stdout:  # the worker says when it is listening: idle in BLPOP
            if "Listening on" in line:
                break
        worker.send_signal(signal.SIGTERM)
        out, _ = worker.communicate(timeout=20)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert worker.returncode == 0
    assert "STOPPED" in out
