"""The watcher's reconcile pass reads a GitTarget's health only where it changed (issue 29,
idle cost; issue 26's series and Ready message): the writers name the key they changed in
``changed:health`` in the same round trip (a push record, an apply outcome counted, an event
stream whose oldest entry may have moved), the pass takes the set in one command and reads
those alone, and everything every ``FULL_EVERY_S`` and after Redis lost its data (C8).
Commands are counted on the pass's own connection; real Redis, the real writers."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import redis

from services.watcher.target_health import FULL_EVERY_S, HealthView
from shared.model.events import GitTargetRef, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.model.ledger import LastRequest
from shared.settings import Settings
from shared.store.keys import Keys
from shared.store.ledger import Ledger
from shared.store.streams import EventStream
from shared.store.target_health import Changed, Push, TargetHealth
from tests.integration.counting import counting_client

pytestmark = pytest.mark.integration

#: Five GitTargets, the last two on one branch.
TARGETS = [(GitTargetUid(f"uid-{i}"), BranchKey(f"bk-{min(i, 3)}")) for i in range(5)]


def _counting(counts: Counter[str]) -> redis.Redis:
    return counting_client(Settings.from_env().redis_url, counts)


def _event(name: str) -> ObjectEvent:
    oid = ObjectId("", "v1", "configmaps", "ConfigMap", "team", name)
    ref = GitTargetRef(GitTargetUid("uid-1"), "team", "gt1")
    return ObjectEvent(ref, "UPDATE", oid, f"uid-{name}", "1", {}, (), 0.0)


def _millis(entry_id: str) -> float:
    return int(entry_id.split("-", maxsplit=1)[0]) / 1000.0


def test_the_reconcile_pass_reads_the_changed_health_alone(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    keys = Keys(key_prefix)
    counts: Counter[str] = Counter()
    client = _counting(counts)
    now = [0.0]
    view = HealthView(TargetHealth(client, keys), clock=lambda: now[0])
    events = EventStream(redis_client, keys)

    def observe() -> Any:
        counts.clear()
        now[0] += 10.0
        return view.observe(TARGETS)

    try:
        client.ping()  # the connection's handshake, not the pass's
        first = observe()
        assert counts == Counter({"SPOP": 1, "HGET": 5, "HMGET": 5, "XRANGE": 4}), counts
        assert first[GitTargetUid("uid-1")].oldest_unpushed is None
        assert observe() == first
        assert counts == Counter({"SPOP": 1}), "nothing changed: one command"

        entry = events.publish(BranchKey("bk-1"), _event("a"))
        seen = observe()
        assert counts == Counter({"SPOP": 1, "XRANGE": 1}), "the stream that got its first entry"
        assert seen[GitTargetUid("uid-1")].oldest_unpushed == _millis(entry)
        events.publish(BranchKey("bk-1"), _event("b"))
        assert observe() == seen
        assert counts == Counter({"SPOP": 1}), "a later entry leaves the oldest where it was"

        TargetHealth(redis_client, keys).record_pushes(
            {GitTargetUid("uid-2"): Push("c" * 40, 3, 5.0)}
        )
        request = LastRequest("req-1", "c" * 40, ("CatchUp",), 1.0, 2.0, "Delivered")
        Ledger(redis_client, keys).record(["uid-4"], request)
        seen = observe()
        assert counts == Counter({"SPOP": 1, "HGET": 2, "HMGET": 2}), "the two that changed"
        assert seen[GitTargetUid("uid-2")].pushed == Push("c" * 40, 3, 5.0)
        assert seen[GitTargetUid("uid-4")].applies["Delivered"] == 1
        assert seen[GitTargetUid("uid-3")].applies["Delivered"] == 0

        events.ensure_group(BranchKey("bk-1"))
        read = events.read(BranchKey("bk-1"), "w1", 10, None)
        events.ack(BranchKey("bk-1"), read[:1])  # the push that held the first edit landed
        second = read[1].entry_id
        assert observe()[GitTargetUid("uid-1")].oldest_unpushed == _millis(second)
        assert counts == Counter({"SPOP": 1, "XRANGE": 1})
        events.ack(BranchKey("bk-1"), read[1:])
        assert observe()[GitTargetUid("uid-1")].oldest_unpushed is None

        now[0] += FULL_EVERY_S
        assert observe()[GitTargetUid("uid-2")].pushed == Push("c" * 40, 3, 5.0)
        assert counts == Counter({"SPOP": 1, "HGET": 5, "HMGET": 5, "XRANGE": 4}), "all again"
        view.forget()  # Redis lost its data (C8)
        observe()
        assert counts == Counter({"SPOP": 1, "HGET": 5, "HMGET": 5, "XRANGE": 4}), "all again"
    finally:
        client.close()


def test_a_change_written_without_its_mark_shows_at_the_next_full_read(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """The fallback: a change nobody named (here written by hand; in the product a retired
    branch's stream, or a mark taken by a pass whose read failed) shows within a minute."""
    keys = Keys(key_prefix)
    now = [0.0]
    view = HealthView(TargetHealth(redis_client, keys), clock=lambda: now[0])
    assert view.observe(TARGETS)[GitTargetUid("uid-0")].pushed is None
    redis_client.hset(
        keys.target(GitTargetUid("uid-0")), "pushed", Push("d" * 40, 1, 7.0).to_json()
    )
    now[0] += FULL_EVERY_S - 1
    assert view.observe(TARGETS)[GitTargetUid("uid-0")].pushed is None, "not named: not read"
    now[0] += 1
    assert view.observe(TARGETS)[GitTargetUid("uid-0")].pushed == Push("d" * 40, 1, 7.0)


class _FailingOnce(TargetHealth):
    """Takes the changes, then fails its read once (Redis went away mid-pass)."""

    failing = False

    def read(self, uids: Any, branches: Any) -> Any:
        if self.failing:
            self.failing = False
            raise redis.ConnectionError("Redis is away")
        return super().read(uids, branches)


def test_a_failed_read_reads_everything_at_the_next_pass(
    redis_client: redis.Redis, key_prefix: str
) -> None:
    """The changes a failed pass took are lost with it: the next pass reads everything."""
    keys = Keys(key_prefix)
    health = _FailingOnce(redis_client, keys)
    view = HealthView(health, clock=lambda: 0.0)
    view.observe(TARGETS)
    health.record_pushes({GitTargetUid("uid-1"): Push("e" * 40, 2, 9.0)})
    health.failing = True
    with pytest.raises(redis.ConnectionError):
        view.observe(TARGETS)
    assert health.changes() == Changed(), "the failed pass took the change"
    assert view.observe(TARGETS)[GitTargetUid("uid-1")].pushed == Push("e" * 40, 2, 9.0)
