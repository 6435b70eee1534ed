"""A branch worker that cannot renew its leases is not ready (issue 13; Q1, C9).

The heartbeat renews every held lease each third of a lease period; the branch worker's
``/readyz`` has a ``leases`` check that fails once two beats in a row were missed (one more
miss may lose every lease), and passes again after the next renewal. Real Redis (a private
server the test stops and starts), an injected clock.
"""

from __future__ import annotations

import pytest

from services.branch_worker.heartbeat import Heartbeat, HeldLeases
from shared.health import Check, Health
from shared.model.ids import BranchKey
from shared.store.errors import REDIS_DOWN
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.workers import WorkerRegistry
from tests.integration.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.integration
__all__ = ["redis_server"]  # the fixture, imported for pytest

LEASE_S = 15.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _heartbeat(server: RedisServer, clock: Clock) -> tuple[Heartbeat, Health]:
    client = server.client()
    keys = Keys("test:lease-readiness")
    leases = Leases(client, keys, period_ms=int(LEASE_S * 1000))
    held = HeldLeases()
    lease = leases.acquire(BranchKey("bk"), "w1")
    assert lease is not None
    held.add(lease)
    heartbeat = Heartbeat(
        leases, WorkerRegistry(client, keys), held, "w1", clock=clock, lease_s=LEASE_S
    )
    return heartbeat, Health([Check("leases", heartbeat.renewal_problem)])


def test_renewed_leases_are_ready_and_two_missed_beats_are_not(
    redis_server: RedisServer,
) -> None:
    """Q1: renewal every lease/3; readiness fails once 2 * lease/3 passed without one."""
    clock = Clock()
    heartbeat, health = _heartbeat(redis_server, clock)
    heartbeat.beat()
    assert health.readiness().ready
    clock.now += 2 * heartbeat.interval_s  # exactly two beats late: still ready
    assert health.readiness().ready
    clock.now += 1
    found = health.readiness()
    assert not found.ready
    assert found.results["leases"] == "leases not renewed for 11s (lease period 15s)"
    heartbeat.beat()
    assert health.readiness().ready


def test_a_worker_whose_redis_is_away_turns_not_ready_then_ready_when_it_renews(
    redis_server: RedisServer,
) -> None:
    """C9: beats fail while Redis is away; the worker keeps running but is not ready until a
    beat renews its leases again."""
    clock = Clock()
    heartbeat, health = _heartbeat(redis_server, clock)
    heartbeat.beat()
    redis_server.stop()
    for _ in range(3):  # three beats' worth of time, each beat failing
        clock.now += heartbeat.interval_s
        with pytest.raises(REDIS_DOWN):
            heartbeat.beat()
        heartbeat.missed()
    found = health.readiness()
    assert not found.ready and "not renewed" in found.results["leases"]
    redis_server.start()  # empty, like a Redis without persistence after a crash
    heartbeat.beat()
    assert health.readiness().ready


def test_a_heartbeat_that_failed_is_not_ready(redis_server: RedisServer) -> None:
    """The scheduler stops the process when the heartbeat thread fails; until it has, the
    worker is not ready."""
    heartbeat, health = _heartbeat(redis_server, Clock())
    heartbeat.error = RuntimeError("lua script broke")
    found = health.readiness()
    assert found.results == {"leases": "the lease heartbeat stopped (RuntimeError)"}
