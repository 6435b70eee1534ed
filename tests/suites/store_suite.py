"""Store behaviour that must hold on real Redis and on fakeredis alike.

The unit tier runs these against fakeredis, the integration tier against a real redis-server;
each including module supplies a ``store`` fixture (a client and a fresh key prefix).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import redis

from shared.decide.quiet import BranchView
from shared.model.events import GitTargetRef, ManagerEntry, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.store.branch_health import BranchHealth
from shared.store.branch_state import OURS_KEPT, BranchStates, FencedOff
from shared.store.keys import Keys
from shared.store.leases import Lease, Leases
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
    events.ack(BK, first[:1])
    claimed = events.claim_pending(BK, "new-owner")
    assert [e.event.object_id.name for e in claimed if e.event] == ["b", "c"]
    assert events.read(BK, "new-owner", count=10, block_ms=None) == []
    events.ack(BK, claimed)
    assert events.pending_count(BK) == 0
    assert not store.client.exists(store.keys.branch_latest(BK)), "nothing newest is left"


def _edit(name: str, value: str) -> ObjectEvent:
    event = _event(name)
    return ObjectEvent(
        event.target,
        "UPDATE",
        event.object_id,
        event.uid,
        value,
        {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": value}},
        event.managers,
        event.observed_at,
    )


def test_an_objects_newer_event_replaces_its_unread_one(store: StoreUnderTest) -> None:
    """U1: a stalled branch's stream holds one entry per object, its newest, however often it
    changes (a healthy branch's keeps every event: M6)."""
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    store.client.sadd(store.keys.stalled_branches, BK)  # as BranchHealth.stalled records it
    for i in range(50):
        events.publish(BK, _edit("busy", str(i)))
    events.publish(BK, _event("other"))
    assert events.pending_count(BK) == 2
    read = events.read(BK, "w1", count=10, block_ms=None)
    assert [(e.event.object_id.name, e.event.resource_version) for e in read if e.event] == [
        ("busy", "49"),
        ("other", "7"),
    ]


def test_a_read_entry_replaced_meanwhile_is_not_claimed_again(store: StoreUnderTest) -> None:
    """U1, M8: an owner read an object's event and died before pushing it; a newer event of the
    object replaced it (the branch is stalled), so the next owner gets the newer one only, and
    nothing is lost."""
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    store.client.sadd(store.keys.stalled_branches, BK)
    events.publish(BK, _edit("busy", "1"))
    events.publish(BK, _event("other"))
    held = events.read(BK, "dead-worker", count=10, block_ms=None)
    events.publish(BK, _edit("busy", "2"))
    claimed = events.claim_pending(BK, "new-owner")
    assert [e.event.object_id.name for e in claimed if e.event] == ["other"]
    fresh = events.read(BK, "new-owner", count=10, block_ms=None)
    assert [e.event.resource_version for e in fresh if e.event] == ["2"]
    events.ack(BK, held)  # the dead owner's ids: the newest entry is not forgotten for them
    latest = store.client.hgetall(store.keys.branch_latest(BK))
    assert sorted(latest.values()) == [fresh[0].entry_id]
    events.ack(BK, [*claimed, *fresh])
    assert events.pending_count(BK) == 0
    assert not store.client.exists(store.keys.branch_latest(BK))


def test_entries_a_stale_owner_read_after_the_takeover_are_taken_over(
    store: StoreUnderTest,
) -> None:
    """M8 (found by the safety suite): the new owner started and claimed what was pending;
    the old owner, paused past its lease, then read new entries and found its lease lost. The
    owner takes them over: an entry still its object's newest is returned to apply, one a
    newer entry replaced (here already applied and pushed) is acknowledged unapplied (M5), and
    nothing is left pending, so the branch can be quiet again (Q3)."""
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    assert events.claim_pending(BK, "new-owner") == []
    events.publish(BK, _edit("a", "1"))
    events.publish(BK, _edit("b", "1"))
    stranded = events.read(BK, "old-owner", count=10, block_ms=None)
    assert len(stranded) == 2
    events.publish(BK, _edit("a", "2"))
    newer = events.read(BK, "new-owner", count=10, block_ms=None)
    events.ack(BK, newer)  # a=2 pushed by the new owner
    assert events.claim_stranded(BK, "new-owner") == [stranded[1]]
    assert events.pending_count(BK) == 1
    assert events.claim_stranded(BK, "new-owner") == [], "its own entries are not claimed"
    events.ack(BK, [stranded[1]])
    assert events.pending_count(BK) == 0
    assert not store.client.exists(store.keys.branch_latest(BK))


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
    from shared.store.config import ConfigStore
    from tests.configs import branch_config, target_config

    configs = ConfigStore(store.client, store.keys)
    branch = branch_config("http://git.local/r.git", "main", "team", "gp", commit_window_s=0.0)
    bk = configs.publish_branch(branch)
    assert configs.branch(bk) == branch
    target = target_config(
        GitTargetUid("t-1"), "team", "gt", "http://git.local/r", "main", path="apps"
    )
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


def _owner(store: StoreUnderTest, worker: str = "w1") -> Lease:
    lease = Leases(store.client, store.keys, period_ms=60_000).acquire(BK, worker)
    assert lease is not None
    return lease


def test_an_unpublished_branch_reads_as_empty_and_quiet(store: StoreUnderTest) -> None:
    state = BranchStates(store.client, store.keys).read(BK)
    assert (state.observed_tip, state.ours, state.pending, state.pending_total) == (None, (), {}, 0)
    assert (state.tip_read_at, state.foreign_tip, state.foreign_at) == (None, None, None)
    assert state.view() == BranchView(None, 0, 0, False, 0.0)


def test_each_typed_writer_reads_back_into_the_record(store: StoreUnderTest) -> None:
    """Q2, Q3, Q5-Q7: every field the owner writes is a field of BranchState."""
    states, lease = BranchStates(store.client, store.keys), _owner(store)
    states.publish_takeover(lease, "t1", released=())
    states.publish_counts(lease, windows_open=2, pending=3, last_write_at=40.5)
    states.publish_push(lease, in_flight=True)
    states.publish_tip(lease, "t2", read_at=41.0)
    states.publish_foreign(lease, "t2", at=41.5)
    state = states.read(BK)
    assert (state.observed_tip, state.tip_read_at) == ("t2", 41.0)
    assert (state.windows_open, state.pending, state.last_write_at) == (2, {"w1": 3}, 40.5)
    assert state.push_in_flight
    assert (state.foreign_tip, state.foreign_at) == ("t2", 41.5)
    assert state.view() == BranchView("t2", 2, 3, True, 40.5)


def test_a_finished_push_publishes_its_tip_and_ends_the_push_in_one_write(
    store: StoreUnderTest,
) -> None:
    """Q3: the pushed tip and "no push in flight" land together."""
    states, lease = BranchStates(store.client, store.keys), _owner(store)
    states.publish_push(lease, in_flight=True)
    states.publish_pushed(lease, "t3")
    state = states.read(BK)
    assert (state.observed_tip, state.push_in_flight, state.pushed_at) == ("t3", False, None)
    states.publish_pushed(lease, "t4", at=52.5)  # when it landed: `gitops-reverser get`
    assert (states.read(BK).observed_tip, states.read(BK).pushed_at) == ("t4", 52.5)


def test_counts_without_a_write_keep_the_quiet_period_running(store: StoreUnderTest) -> None:
    """Q2: only a decided write restarts the quiet period; a flush that closes a window does not."""
    states, lease = BranchStates(store.client, store.keys), _owner(store)
    states.publish_counts(lease, 1, 1, last_write_at=10.0)
    states.publish_counts(lease, 0, 0)
    states.publish_tip(lease, "t1")
    state = states.read(BK)
    assert (state.windows_open, state.pending_total, state.last_write_at) == (0, 0, 10.0)
    assert state.tip_read_at is None, "a tip from our own fetch or push is not an ls-remote read"


def test_a_new_owner_takes_over_the_pending_writes_of_the_old_one(store: StoreUnderTest) -> None:
    """Q1, Q3, U3: the old owner's count goes (no field left) as the new one claims its events."""
    states = BranchStates(store.client, store.keys)
    leases = Leases(store.client, store.keys, 60_000)
    old = _owner(store, "old")
    states.publish_counts(old, windows_open=1, pending=4)
    states.publish_push(old, in_flight=True)
    leases.release(old)
    new = _owner(store, "new")
    states.publish_takeover(new, "t9", released=["old"])
    states.publish_counts(new, windows_open=1, pending=4)
    state = states.read(BK)
    assert state.pending == {"new": 4}
    assert (state.observed_tip, state.push_in_flight) == ("t9", False)


def test_our_pushes_are_remembered_newest_last_and_bounded(store: StoreUnderTest) -> None:
    states, lease = BranchStates(store.client, store.keys), _owner(store)
    ours: tuple[str, ...] = ()
    for i in range(OURS_KEPT + 2):
        ours = states.remember_ours(lease, f"sha-{i}", ours)
    state = states.read(BK)
    assert state.ours == ours and len(ours) == OURS_KEPT
    assert (state.ours[-1], state.observed_tip) == (f"sha-{OURS_KEPT + 1}", f"sha-{OURS_KEPT + 1}")


WRITES: dict[str, Callable[[BranchStates, Lease], object]] = {
    "tip": lambda s, lease: s.publish_tip(lease, "late", read_at=1.0),
    "counts": lambda s, lease: s.publish_counts(lease, 1, 1, last_write_at=1.0),
    "push": lambda s, lease: s.publish_push(lease, in_flight=True),
    "pushed": lambda s, lease: s.publish_pushed(lease, "late"),
    "foreign": lambda s, lease: s.publish_foreign(lease, "late", at=1.0),
    "takeover": lambda s, lease: s.publish_takeover(lease, "late", released=["w2"]),
    "ours": lambda s, lease: s.remember_ours(lease, "late", ()),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_worker_that_lost_its_lease_publishes_nothing(store: StoreUnderTest, write: str) -> None:
    """Q1: every writer is fenced by the lease token, in the same Lua step as the write."""
    states = BranchStates(store.client, store.keys)
    leases = Leases(store.client, store.keys, 60_000)
    stale = _owner(store, "w1")
    leases.release(stale)
    successor = _owner(store, "w2")
    states.publish_takeover(successor, "current", released=())
    before = states.read(BK)
    with pytest.raises(FencedOff):
        WRITES[write](states, stale)
    assert states.read(BK) == before


def _served_branch(store: StoreUnderTest) -> tuple[BranchKey, GitTargetUid]:
    """A branch published by the watcher with one GitTarget, in one transaction."""
    from shared.store.config import ConfigStore
    from tests.configs import branch_config, target_config

    url = "http://git.local/served.git"
    target = target_config(GitTargetUid("t-live"), "team", "gt", url, "main", path="apps")
    bk = ConfigStore(store.client, store.keys).publish_served(
        branch_config(url, "main", "team", "gp"), [target]
    )
    return bk, target.uid


def test_a_branch_and_its_targets_are_published_together(store: StoreUnderTest) -> None:
    from shared.store.config import ConfigStore
    from shared.store.workers import WorkerRegistry

    bk, uid = _served_branch(store)
    configs = ConfigStore(store.client, store.keys)
    assert configs.branch(bk) is not None and configs.target(uid) is not None
    assert configs.has_targets(bk)
    assert WorkerRegistry(store.client, store.keys).branches() == [bk]


def test_a_withdrawn_target_keeps_its_refusal_and_leaves_its_branch(
    store: StoreUnderTest,
) -> None:
    from shared.store.config import ConfigStore

    bk, uid = _served_branch(store)
    configs = ConfigStore(store.client, store.keys)
    configs.set_refusal(uid, "SecretRefused", "no")
    assert configs.withdraw_target(uid) is True
    assert configs.target(uid) is None, "the branch worker no longer writes for it"
    assert not configs.has_targets(bk)
    assert configs.refusal(uid) == {"reason": "SecretRefused", "message": "no"}
    assert configs.withdraw_target(uid) is False, "nothing left to withdraw"
    configs.forget_uid(uid)
    assert configs.refusal(uid) is None


def test_first_refusals_reads_many_targets_at_once_as_refusal_does(
    store: StoreUnderTest,
) -> None:
    from shared.store.config import ConfigStore

    configs = ConfigStore(store.client, store.keys)
    a, b, c = GitTargetUid("a"), GitTargetUid("b"), GitTargetUid("c")
    configs.set_refusal(a, "SecretRefused", "no", key="object:v1/secrets/x")
    configs.set_refusal(a, "FolderNotOurs", "theirs")
    configs.set_refusal(c, "SecretRefused", "no")
    found = configs.first_refusals([a, b, c])
    assert found == {a: configs.refusal(a), c: configs.refusal(c)}
    assert found[a] == {"reason": "FolderNotOurs", "message": "theirs"}
    assert configs.first_refusals([]) == {}


def test_retire_removes_a_branch_without_targets_and_keeps_its_fence(
    store: StoreUnderTest,
) -> None:
    from shared.store.config import ConfigStore
    from shared.store.workers import WorkerRegistry

    bk, uid = _served_branch(store)
    configs, registry = (
        ConfigStore(store.client, store.keys),
        WorkerRegistry(store.client, store.keys),
    )
    lease = Leases(store.client, store.keys, period_ms=60_000).acquire(bk, "w1")
    assert lease is not None
    EventStream(store.client, store.keys).publish(bk, _event("left-over"))
    BranchStates(store.client, store.keys).publish_counts(lease, 0, 0)
    health = BranchHealth(store.client, store.keys)
    other = BranchKey("still-stalled")
    health.stalled(bk, "PushFailing", "push refused", 10.0)
    health.stalled(other, "PushFailing", "push refused", 20.0)
    assert registry.retire(lease) is False, "a GitTarget still writes to the branch"
    assert set(health.stalls()) == {bk, other}, "a branch not retired keeps its stall"
    configs.forget_uid(uid)
    assert registry.retire(Lease(bk, "w0", lease.token + 1)) is False, (
        "only the lease holder retires a branch"
    )
    assert registry.retire(lease) is True
    k = store.keys
    left = [
        key
        for key in (k.branch_events(bk), k.branch_state(bk), k.branch_meta(bk), k.branch_lease(bk))
        if store.client.exists(key)
    ]
    assert left == []
    assert registry.branches() == []
    assert store.client.get(k.branch_fence(bk)) == str(lease.token), "tokens stay monotonic"
    assert not store.client.exists(k.branch_stall(bk)), "T4: its stall went with it"
    assert list(health.stalls()) == [other], "T4: out of the stalled set; others' stay"


def test_retire_removes_the_appliers_tracked_under_the_branch(store: StoreUnderTest) -> None:
    """A5: obligations of a retired branch's appliers go with it (their GitTargets are gone);
    an applier tracked under another branch keeps its record."""
    from shared.decide.obligations import owe_catch_up
    from shared.model.ids import ApplierKey
    from shared.store.appliers import ApplierStore
    from shared.store.config import ConfigStore
    from shared.store.workers import WorkerRegistry

    bk, uid = _served_branch(store)
    appliers = ApplierStore(store.client, store.keys)
    mine, other = ApplierKey("ak-mine"), ApplierKey("ak-other")
    for ak, branch in ((mine, bk), (other, BranchKey("elsewhere"))):
        appliers.amend(ak, "Kustomization", lambda a: owe_catch_up(a, "c1", [str(uid)]))
        appliers.track(branch, ak)
    lease = Leases(store.client, store.keys, period_ms=60_000).acquire(bk, "w1")
    assert lease is not None
    ConfigStore(store.client, store.keys).forget_uid(uid)
    assert WorkerRegistry(store.client, store.keys).retire(lease) is True
    k = store.keys
    assert not store.client.exists(k.applier(mine), k.branch_appliers(bk))
    assert appliers.load(other, "Kustomization").owes() == {"CatchUp": frozenset({str(uid)})}


def test_retire_keeps_a_siblings_obligations_in_a_shared_applier(store: StoreUnderTest) -> None:
    """A3, A5: sibling branches share one Kustomization; retiring one drops what the record
    owes its gone GitTarget and keeps what it owes the sibling's live one (the record was
    deleted whole before, the sibling's CatchUp with it)."""
    from shared.decide.obligations import owe_catch_up, owe_refusal
    from shared.model.ids import ApplierKey
    from shared.store.appliers import ApplierStore
    from shared.store.config import ConfigStore
    from shared.store.workers import WorkerRegistry
    from tests.configs import branch_config, target_config

    bk, gone = _served_branch(store)
    url = "http://git.local/sibling.git"
    sibling = target_config(GitTargetUid("t-sibling"), "team", "gt2", url, "main", path="apps")
    sibling_bk = ConfigStore(store.client, store.keys).publish_served(
        branch_config(url, "main", "team", "gp"), [sibling]
    )
    appliers = ApplierStore(store.client, store.keys)
    shared_ks = ApplierKey("ak-shared")
    appliers.amend(
        shared_ks,
        "Kustomization",
        lambda a: owe_refusal(
            owe_catch_up(a, "c1", [str(gone), str(sibling.uid)]), str(gone), True
        ),
    )
    appliers.track(bk, shared_ks)
    appliers.track(sibling_bk, shared_ks)
    lease = Leases(store.client, store.keys, period_ms=60_000).acquire(bk, "w1")
    assert lease is not None
    ConfigStore(store.client, store.keys).forget_uid(gone)
    assert WorkerRegistry(store.client, store.keys).retire(lease) is True
    owed = appliers.load(shared_ks, "Kustomization")
    assert owed.owes() == {"CatchUp": frozenset({str(sibling.uid)})}
    assert owed.catch_up == "c1"


def test_renew_many_answers_per_lease_and_alive_counts_recent_heartbeats(
    store: StoreUnderTest,
) -> None:
    from shared.store.workers import WorkerRegistry

    leases = Leases(store.client, store.keys, period_ms=60_000)
    mine, other = leases.acquire(BK, "w1"), leases.acquire(BranchKey("b1"), "w1")
    assert mine is not None and other is not None
    store.client.delete(store.keys.branch_lease(BranchKey("b1")))  # expired meanwhile
    assert leases.renew_many([mine, other]) == [True, False]
    assert leases.renew_many([]) == []
    assert store.client.pttl(store.keys.branch_lease(BK)) > 0, "ours renewed"
    assert store.client.exists(store.keys.branch_lease(BranchKey("b1"))) == 0, "not re-made"
    assert leases.holders([BK, BranchKey("b1")]) == [mine.value, None]
    assert leases.holders([]) == []
    registry = WorkerRegistry(store.client, store.keys)
    registry.heartbeat("w1", 100.0, 15.0)
    registry.heartbeat("w2", 80.0, 15.0)
    assert registry.alive(100.0, 15.0) == 1
