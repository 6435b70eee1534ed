"""The store side of a GitTarget's hand controls: a suspended GitTarget's events wait in its
backlog and reach the branch on resume (P7, M8); the remote commit a branch's owner verified,
for status.remote (P10).

Run on fakeredis (unit tier) and on a real redis-server (integration tier); each including
module supplies a ``store`` fixture.
"""

from __future__ import annotations

from shared.model.events import GitTargetRef, Listing, ObjectEvent
from shared.model.ids import BranchKey, GitTargetUid, ObjectId
from shared.store.branch_state import BranchStates
from shared.store.config import ConfigStore
from shared.store.leases import Leases
from shared.store.streams import EventStream
from shared.store.suspension import Suspensions
from tests.suites.store_suite import StoreUnderTest, _edit, _event

BK = BranchKey("b-suspended")
UID = GitTargetUid("uid-1")  # the GitTarget of the suite's events
OTHER = GitTargetRef(GitTargetUid("uid-2"), "team", "other")


def _parts(store: StoreUnderTest) -> tuple[EventStream, Suspensions]:
    events = EventStream(store.client, store.keys)
    events.ensure_group(BK)
    return events, Suspensions(store.client, store.keys)


def _names(events: EventStream) -> list[tuple[str, str]]:
    read = events.read(BK, "w1", count=100, block_ms=None)
    return [
        (e.event.object_id.name, e.event.resource_version)
        if e.event
        else ("LISTED:" + ",".join(sorted(e.listing.names)) if e.listing else "?", "")
        for e in read
    ]


def test_a_suspended_targets_events_wait_and_the_others_flow(store: StoreUnderTest) -> None:
    """P7: nothing of the suspended GitTarget reaches the branch; another GitTarget's does."""
    events, suspensions = _parts(store)
    suspensions.suspend(UID)
    assert events.publish(BK, _edit("a", "1")) == ""
    other = _event("b")
    other = ObjectEvent(OTHER, "UPDATE", other.object_id, "u-b", "3", other.body, (), 1.0)
    assert events.publish(BK, other) != ""
    assert _names(events) == [("b", "3")]
    assert suspensions.suspended() == {UID}
    assert suspensions.backlog_size(UID) == 1


def test_resume_moves_the_final_state_of_each_object_in_order(store: StoreUnderTest) -> None:
    """P7, M5: many edits of one object while suspended reach the branch as its newest only;
    objects keep the order they were last published in, and a listing stays after the objects
    it names, so its deletes never remove what was made meanwhile."""
    events, suspensions = _parts(store)
    suspensions.suspend(UID)
    for i in range(20):
        events.publish(BK, _edit("busy", str(i)))
    events.publish(BK, _edit("quiet", "5"))
    events.publish_many(BK, [_edit("made", "8")])
    listing = Listing(
        _event("x").target,
        ObjectId("", "v1", "configmaps", "ConfigMap", "team", ""),
        frozenset({"busy", "quiet", "made"}),
        2.0,
    )
    events.publish(BK, listing)
    events.publish(BK, _event("gone", "DELETE"))
    assert _names(events) == []
    assert suspensions.resume(UID, BK) == 5
    assert _names(events) == [
        ("busy", "19"),
        ("quiet", "5"),
        ("made", "8"),
        ("LISTED:busy,made,quiet", ""),
        ("gone", "7"),
    ]
    assert suspensions.suspended() == set() and suspensions.backlog_size(UID) == 0
    assert store.client.sismember(store.keys.branches, BK)


def test_after_resume_events_go_to_the_branch_again(store: StoreUnderTest) -> None:
    """An edit published after resume comes after the backlog and is the object's newest."""
    events, suspensions = _parts(store)
    suspensions.suspend(UID)
    events.publish(BK, _edit("a", "1"))
    suspensions.resume(UID, BK)
    events.publish(BK, _edit("a", "2"))
    assert _names(events) == [("a", "1"), ("a", "2")]
    assert suspensions.resume(UID, BK) == 0  # resuming again moves nothing


def test_a_backlog_entry_on_a_stalled_branch_replaces_the_objects_unread_one(
    store: StoreUnderTest,
) -> None:
    """U1 holds across the move: on a stalled branch the moved entry replaces the object's
    entry already on the stream, as a publish would."""
    events, suspensions = _parts(store)
    store.client.sadd(store.keys.stalled_branches, BK)
    events.publish(BK, _edit("a", "1"))
    suspensions.suspend(UID)
    events.publish(BK, _edit("a", "2"))
    suspensions.resume(UID, BK)
    assert _names(events) == [("a", "2")]


def test_a_forgotten_target_leaves_no_mark_and_no_backlog(store: StoreUnderTest) -> None:
    """A GitTarget deleted while suspended: its mark and its backlog go with it."""
    events, suspensions = _parts(store)
    suspensions.suspend(UID)
    events.publish(BK, _edit("a", "1"))
    ConfigStore(store.client, store.keys).forget_uid(UID)
    assert suspensions.suspended() == set()
    assert not store.client.exists(store.keys.target_backlog(UID))


def test_the_owner_publishes_the_remote_commit_it_verified(store: StoreUnderTest) -> None:
    """P10: a push accepted at a commit is ``Push``; a read of the ref advertisement ``Fetch``;
    a read that found no branch verifies nothing."""
    lease = Leases(store.client, store.keys, 30_000).acquire(BK, "w1")
    assert lease is not None
    states = BranchStates(store.client, store.keys)
    other = BranchKey("b-never-owned")
    assert states.verified_many([BK, other]) == {BK: None, other: None}
    states.remember_ours(lease, "a" * 40, (), at=100.0)
    verified = states.verified_many([BK])[BK]
    assert verified is not None and (verified.revision, verified.at, verified.by) == (
        "a" * 40,
        100.0,
        "Push",
    )
    states.publish_tip(lease, "b" * 40, read_at=160.0)
    verified = states.verified_many([BK])[BK]
    assert verified is not None and (verified.revision, verified.by) == ("b" * 40, "Fetch")
    states.publish_tip(lease, None, read_at=220.0)
    states.publish_tip(lease, "c" * 40)  # the owner's own fetch: not a verification read
    verified = states.verified_many([BK])[BK]
    assert verified is not None and (verified.revision, verified.at) == ("b" * 40, 160.0)
