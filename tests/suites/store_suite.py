"""Store behaviour that must hold on real Redis and on fakeredis alike.

The unit tier runs these against fakeredis, the integration tier against a real redis-server;
each including module supplies a ``store`` fixture (a client and a fresh key prefix).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.streams import EventStream


@dataclass
class StoreUnderTest:
    client: redis.Redis
    keys: Keys


BK = BranchKey("b0")


def _event(name: str, op: str = "UPDATE") -> ObjectEvent:
    return ObjectEvent(
        target=GitTargetRef(GitTargetUid("uid-1"), "team", "gt"),
        operation=op,  # type: ignore[arg-type]
        object_id=ObjectId("", "v1", "configmaps", "ConfigMap", "team", name),
        uid="u-" + name,
        resource_version="7",
        body=None if op == "DELETE" else {"apiVersion": "v1", "kind": "ConfigMap"},
        managers=(ManagerEntry("kubectl-edit", "Update", "2026-11-29T10:00:00Z"),),
        observed_at=1.5,
    )


def test_events_round_trip_through_the_stream(store: StoreUnderTest) -> None:
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    events.publish(BK, _event("a"))
    events.publish(BK, _event("b", "DELETE"))
    read = events.read(BK, "w1", count=10, block_ms=None)
    assert [e.event for e in read] == [_event("a"), _event("b", "DELETE")]
    assert store.client.sismember(store.keys.branches, BK)


def test_unacknowledged_events_are_claimed_by_the_next_owner(store: StoreUnderTest) -> None:
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    for name in ("a", "b", "c"):
        events.publish(BK, _event(name))
    first = events.read(BK, "dead-worker", count=10, block_ms=None)
    events.ack(BK, [first[0].entry_id])
    claimed = events.claim_pending(BK, "new-owner")
    assert [e.event.object_id.name for e in claimed if e.event] == ["b", "c"]
    assert events.read(BK, "new-owner", count=10, block_ms=None) == []
    events.ack(BK, [e.entry_id for e in claimed])
    assert events.pending_count(BK) == 0


def test_ensure_group_is_idempotent(store: StoreUnderTest) -> None:
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    events.ensure_group(BK)
    events.publish(BK, _event("a"))
    assert len(events.read(BK, "w", count=5, block_ms=None)) == 1


def test_a_lease_has_one_holder_and_fresh_tokens(store: StoreUnderTest) -> None:
    leases = Leases(store.client, store.keys, period_ms=60_000)
    first = leases.acquire(BK, "w1")
    assert first is not None and first.token == 1
    assert leases.acquire(BK, "w2") is None
    assert leases.renew(first)
    leases.release(first)
    second = leases.acquire(BK, "w2")
    assert second is not None and second.token == 2
    assert not leases.renew(first), "a stale holder cannot renew the successor's lease"
    assert leases.holder(BK) == "w2|2"
    assert leases.current_token(BK) == 2


def test_an_expired_lease_can_be_taken_over(store: StoreUnderTest) -> None:
    leases = Leases(store.client, store.keys, period_ms=60_000)
    dead = leases.acquire(BK, "dead")
    assert dead is not None
    store.client.pexpire(store.keys.branch_lease(BK), 1)
    store.client.delete(store.keys.branch_lease(BK))  # what expiry does, without waiting for it
    taker = leases.acquire(BK, "alive")
    assert taker is not None and taker.token == dead.token + 1


def test_branch_and_target_config_round_trip_and_forget(store: StoreUnderTest) -> None:
    from shared.model.config import BranchConfig, TargetConfig
    from shared.store.config import ConfigStore

    configs = ConfigStore(store.client, store.keys)
    branch = BranchConfig("http://git.local/r.git", "main", "team", "gp", commit_window_s=0.0)
    bk = configs.publish_branch(branch)
    assert configs.branch(bk) == branch
    target = TargetConfig(GitTargetUid("t-1"), "team", "gt", "http://git.local/r", "main", "apps")
    configs.publish_target(target)
    assert configs.target(GitTargetUid("t-1")) == target
    assert store.client.smembers(store.keys.branch_targets(bk)) == {"t-1"}
    configs.set_refusal(target.uid, "SecretRefused", "Secret team/s is never written")
    assert configs.refusal(target.uid) == {
        "reason": "SecretRefused",
        "message": "Secret team/s is never written",
    }
    store.client.set(store.keys.watch_cursor(target.uid, "/configmaps", "team"), "42")
    configs.forget_target(target)
    assert configs.target(target.uid) is None
    assert configs.refusal(target.uid) is None
    assert store.client.get(store.keys.watch_cursor(target.uid, "/configmaps", "team")) is None
    assert store.client.smembers(store.keys.branch_targets(bk)) == set()
