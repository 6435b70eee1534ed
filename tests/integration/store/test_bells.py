"""A worker's doorbell (``shared.store.bells``): the receiver's notice store and the
dispatcher's report ring the branch's lease holder, in the same Lua step, and only a doorbell
its worker opened; the scheduler's group read returns the rings with the events."""

from __future__ import annotations

import pytest
import redis

from shared.model.ids import Branch, BranchKey
from shared.model.notices import PushNotice
from shared.model.requests import AttemptOutcome
from shared.store.attempts import Attempts
from shared.store.bells import Bells
from shared.store.keys import Keys
from shared.store.leases import Leases
from shared.store.notices import NoticeWriter
from shared.store.streams import EventStream

pytestmark = pytest.mark.integration

URL = "https://git.example/team/apps.git"


def _notice(delivery: str) -> PushNotice:
    return PushNotice("team/gp", URL, "refs/heads/main", "a" * 40, delivery, 0.0)


def _rings(client: redis.Redis, keys: Keys, worker: str) -> list[str]:
    return [f["b"] for _, f in client.xrange(keys.worker_bell(worker))]


@pytest.fixture
def keys(key_prefix: str) -> Keys:
    return Keys(key_prefix)


def test_a_stored_notice_rings_the_lease_holder_only(redis_client: redis.Redis, keys: Keys) -> None:
    """R4 + the doorbell: the holder of the notice's branch is rung once per notice; another
    open doorbell is not; a replayed delivery (nothing stored) rings nobody."""
    bk = Branch(URL, "main").key
    bells = Bells(redis_client, keys)
    bells.open("w1", 15.0)
    bells.open("w2", 15.0)
    assert Leases(redis_client, keys, 15_000).acquire(bk, "w1") is not None
    writer = NoticeWriter(redis_client, keys)
    assert writer.store("team/gp", "d-1", [_notice("d-1")])
    assert _rings(redis_client, keys, "w1") == [bk]
    assert _rings(redis_client, keys, "w2") == []
    assert not writer.store("team/gp", "d-1", [_notice("d-1")]), "a replay"
    assert _rings(redis_client, keys, "w1") == [bk], "a replay rings nobody"
    assert writer.store("team/gp", "", [_notice("")]), "no delivery id: stored always"
    assert _rings(redis_client, keys, "w1") == [bk, bk]


def test_nobody_holding_the_branch_or_a_closed_doorbell_creates_nothing(
    redis_client: redis.Redis, keys: Keys
) -> None:
    """A notice for a branch nobody holds rings nobody; one whose holder has no doorbell (a
    worker gone, or of a version without one) creates none (``XADD NOMKSTREAM``)."""
    bk = Branch(URL, "main").key
    writer = NoticeWriter(redis_client, keys)
    assert writer.store("team/gp", "d-1", [_notice("d-1")])
    assert Leases(redis_client, keys, 15_000).acquire(bk, "gone") is not None
    assert writer.store("team/gp", "d-2", [_notice("d-2")])
    assert not redis_client.exists(keys.worker_bell("gone"))
    assert redis_client.xlen(keys.branch_notices(bk)) == 2, "the notices are stored all the same"


def test_an_outcome_rings_the_owner(redis_client: redis.Redis, keys: Keys) -> None:
    """A4 + the doorbell: the dispatcher's one report of a token rings the branch's owner
    (with its ledger entry and outcome, in one script); a second report of the token, refused,
    rings nobody."""
    bk = BranchKey("bk-outcomes")
    Bells(redis_client, keys).open("w1", 15.0)
    assert Leases(redis_client, keys, 15_000).acquire(bk, "w1") is not None
    attempts = Attempts(redis_client, keys, "apply-attempts")
    assert attempts.report_once(bk, AttemptOutcome("t-1", "Delivered"))
    assert not attempts.report_once(bk, AttemptOutcome("t-1", "Failed", "again"))
    assert _rings(redis_client, keys, "w1") == [bk]
    attempts.report(bk, AttemptOutcome("t-2", "Delivered"))
    assert _rings(redis_client, keys, "w1") == [bk, bk]
    assert len(attempts.outcomes(bk)) == 2


def test_the_group_read_returns_rings_with_the_events_and_answers_them(
    redis_client: redis.Redis, keys: Keys
) -> None:
    """One blocking group read returns at a ring although no event came, names the rung
    branch, and acknowledges and deletes the ring, so the next read waits again."""
    bk = BranchKey("bk-read")
    bells = Bells(redis_client, keys)
    bells.open("w1", 15.0)
    events = EventStream(redis_client, keys)
    events.ensure_group(bk)
    assert Leases(redis_client, keys, 15_000).acquire(bk, "w1") is not None
    bells.ring(redis_client, bk)
    read = events.read_rung([bk], "w1", 10, 60_000, bells.key("w1"))
    assert (read.batches, read.rung) == ({}, frozenset({bk}))
    assert redis_client.xlen(bells.key("w1")) == 0
    assert redis_client.xpending(bells.key("w1"), "owners")["pending"] == 0
    again = events.read_rung([bk], "w1", 10, None, bells.key("w1"))
    assert (again.batches, again.rung) == ({}, frozenset())


def test_a_doorbell_gone_is_opened_again_by_the_next_read(
    redis_client: redis.Redis, keys: Keys
) -> None:
    """C9: a doorbell that went (its time ran out, Redis was wiped) fails no read: the read
    makes it again, reads nothing that time, and the next ring reaches it."""
    bk = BranchKey("bk-gone")
    bells = Bells(redis_client, keys)
    bells.open("w1", 15.0)
    events = EventStream(redis_client, keys)
    events.ensure_group(bk)
    redis_client.delete(bells.key("w1"))
    read = events.read_rung([bk], "w1", 10, None, bells.key("w1"))
    assert (read.batches, read.rung) == ({}, frozenset())
    assert Leases(redis_client, keys, 15_000).acquire(bk, "w1") is not None
    bells.ring(redis_client, bk)
    assert events.read_rung([bk], "w1", 10, None, bells.key("w1")).rung == {bk}
