"""Receiver store behaviour that must hold on fakeredis and on real Redis alike (R4, R5).

Included by ``test_store_fake.py`` (unit tier) and ``tests/integration/receiver/
test_store_redis.py``; each supplies a ``store`` fixture (a client and a fresh key prefix).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

from shared.model.ids import Branch
from shared.model.notices import PushNotice
from shared.model.receivers import ReceiverRecord, webhook_digest
from shared.store.keys import Keys
from shared.store.notice_reader import NoticeReader
from shared.store.notices import SEEN_FOR, NoticeWriter
from shared.store.receivers import ReceiverDirectory

URL = "https://git.example.com/team/apps.git"


@dataclass
class StoreUnderTest:
    client: redis.Redis
    keys: Keys


def _notice(branch: str = "main", delivery: str = "d-1", after: str = "a" * 40) -> PushNotice:
    return PushNotice("team/gp", URL, f"refs/heads/{branch}", after, delivery, 100.0)


def _stream(store: StoreUnderTest, branch: str = "main") -> list[PushNotice]:
    reader = NoticeReader(store.client, store.keys)
    return reader.read(Branch(URL, branch).key, count=10_000)


def test_publish_lookup_forget_a_receiver(store: StoreUnderTest) -> None:
    """The watcher publishes receiver:{digest}; the receiver finds it by the path digest."""
    directory = ReceiverDirectory(store.client, store.keys)
    record = ReceiverRecord("team", "gp", "gitea", "hook-token", URL, ("main",))
    digest = webhook_digest(b"token", "gp", "team")
    assert directory.lookup(digest) is None
    directory.publish(digest, record)
    assert directory.lookup(digest) == record
    assert directory.published() == {digest}
    directory.forget(digest)
    assert directory.lookup(digest) is None and directory.published() == set()


def test_an_unreadable_record_is_no_receiver(store: StoreUnderTest) -> None:
    """A record written by another version (or damaged) answers 404, never a crash."""
    store.client.set(store.keys.receiver("ab" * 32), "{not json")
    assert ReceiverDirectory(store.client, store.keys).lookup("ab" * 32) is None


def test_a_delivery_is_stored_once(store: StoreUnderTest) -> None:
    """R4: a delivery id seen before stores no second notice."""
    writer = NoticeWriter(store.client, store.keys)
    assert writer.store("team/gp", "d-1", [_notice()]) is True
    assert writer.store("team/gp", "d-1", [_notice(after="b" * 40)]) is False
    notices = _stream(store)
    assert [(n.delivery, n.after) for n in notices] == [("d-1", "a" * 40)]


def test_the_guards_expire_with_their_age_limit(store: StoreUnderTest) -> None:
    """R4, U2 (keys.py): the replay guards expire, so they never accumulate."""
    writer = NoticeWriter(store.client, store.keys)
    writer.store("team/gp", "d-1", [_notice()])
    ttl = store.client.ttl(writer.guard_key("team/gp"))
    assert SEEN_FOR.total_seconds() - 5 <= int(ttl) <= SEEN_FOR.total_seconds()  # type: ignore[arg-type]


def test_a_flood_of_distinct_deliveries_keeps_a_bounded_number_of_guards(
    store: StoreUnderTest,
) -> None:
    """U2: fails before it: one key per distinct delivery, a day each, no cap."""
    writer = NoticeWriter(store.client, store.keys, max_guards=50)
    for i in range(300):
        assert writer.store("team/gp", f"d-{i}", [_notice(delivery=f"d-{i}")])
    assert int(store.client.zcard(writer.guard_key("team/gp"))) == 50  # type: ignore[arg-type]
    guards = set(store.client.scan_iter(f"{store.keys.prefix}:receiver:*"))
    assert guards == {writer.guard_key("team/gp"), store.keys.delivered(_notice().url)}, (
        "one key for the GitProvider (and one for the repository's last delivery, P14), "
        "not one each"
    )
    assert not writer.store("team/gp", "d-299", [_notice()]), "the newest ids are kept"


def test_a_guard_older_than_the_age_limit_is_forgotten(store: StoreUnderTest) -> None:
    """U2: the age limit holds per id, by the injected clock, not only for the whole set."""
    clock = [1_000.0]
    writer = NoticeWriter(store.client, store.keys, clock=lambda: clock[0])
    assert writer.store("team/gp", "d-1", [_notice()])
    clock[0] += SEEN_FOR.total_seconds() - 1
    assert not writer.store("team/gp", "d-1", [_notice()]), "still a replay within the limit"
    clock[0] += 2
    assert writer.store("team/gp", "d-1", [_notice()]), "past the limit: a new delivery"


def test_the_same_id_at_two_providers_is_two_deliveries(store: StoreUnderTest) -> None:
    """GitHub gives every hook of one event the same delivery id (github/docs#32822)."""
    writer = NoticeWriter(store.client, store.keys)
    assert writer.store("team/gp", "same", [_notice()]) is True
    assert writer.store("other/gp", "same", [_notice()]) is True
    assert len(_stream(store)) == 2


def test_several_branches_are_stored_together(store: StoreUnderTest) -> None:
    """One delivery naming two used branches writes both notices in one step."""
    writer = NoticeWriter(store.client, store.keys)
    written = [_notice("main", "d-2"), _notice("staging", "d-2")]
    assert writer.store("team/gp", "d-2", written)
    assert _stream(store, "main") + _stream(store, "staging") == written, "read back as written"


def test_any_text_in_a_notice_reads_back_exactly(store: StoreUnderTest) -> None:
    """The notices travel to Redis as one JSON argument: quotes, backslashes, non-ASCII and
    characters JSON escapes come back byte for byte, and the replay guard still holds."""
    writer = NoticeWriter(store.client, store.keys)
    odd = 'd-"\\/\t\u00e9\u6f22\U0001f600]}'
    written = [
        PushNotice("t\u00ebam/gp", URL, "refs/heads/main", "", odd, 1.5),
        PushNotice("t\u00ebam/gp", URL, "refs/heads/r\u00e9l", "b" * 40, odd, 1.5),
    ]
    assert writer.store("t\u00ebam/gp", odd, written)
    assert not writer.store("t\u00ebam/gp", odd, written), "the guard holds for this id too"
    assert _stream(store, "main") + _stream(store, "r\u00e9l") == written


def test_without_a_delivery_id_every_delivery_is_stored(store: StoreUnderTest) -> None:
    """A host that sends no id cannot be told apart from a new push: store each."""
    writer = NoticeWriter(store.client, store.keys)
    assert writer.store("team/gp", "", [_notice(delivery="")])
    assert writer.store("team/gp", "", [_notice(delivery="")])
    assert len(_stream(store)) == 2


def test_streams_are_bounded(store: StoreUnderTest) -> None:
    """R4 / architecture: the notices stream has a bounded length (MAXLEN ~)."""
    writer = NoticeWriter(store.client, store.keys, max_len=10)
    for i in range(300):
        writer.store("team/gp", f"d-{i}", [_notice(delivery=f"d-{i}")])
    length = int(store.client.xlen(store.keys.branch_notices(Branch(URL, "main").key)))  # type: ignore[arg-type]
    assert 10 <= length < 300


def test_long_delivery_ids_are_hashed_into_short_keys(store: StoreUnderTest) -> None:
    """Delivery ids are the sender's choice; keys stay short, replays still match."""
    writer = NoticeWriter(store.client, store.keys)
    long_id = "x" * 5000
    assert writer.guard_id(long_id) != writer.guard_id("x" * 4999)
    assert len(writer.guard_id(long_id)) < 200
    assert writer.store("team/gp", long_id, [_notice()]) is True
    assert writer.store("team/gp", long_id, [_notice()]) is False


def test_a_script_cache_flushed_under_the_writer_is_filled_again(store: StoreUnderTest) -> None:
    """Redis forgets its scripts on a restart or SCRIPT FLUSH; the writer sends the script
    again and stores, and the replay guard written before the flush still holds (R4)."""
    writer = NoticeWriter(store.client, store.keys)
    assert writer.store("team/gp", "d-1", [_notice()])
    store.client.script_flush()
    assert writer.store("team/gp", "d-2", [_notice(delivery="d-2")])
    assert not writer.store("team/gp", "d-1", [_notice()])
    assert [n.delivery for n in _stream(store)] == ["d-1", "d-2"]
