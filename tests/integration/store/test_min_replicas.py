"""Acknowledged writes wait for replicas (``GITOPS_REVERSER_REDIS_MIN_REPLICAS``).

A real primary and a real replica (``--replicaof``), private to each test: with one replica
linked, the watcher's publish, the receiver's store, the branch worker's ack and the
dispatcher's report return, and the replica holds what they wrote; with the replica gone (or
more replicas asked for than there are) each raises a connection error (``ReplicasBehind``):
the write counts as not done, and the callers treat it as the Redis outage they ride out.

Where a test expects the replica to confirm, its client's WAIT deadline is ``CONFIRM_MS``:
``WAIT`` answers the moment the replica confirms, so a long deadline costs nothing when it
does, and a machine too busy to schedule the replica within the product's 1 s does not fail
the test (it did once, beside two CPU burners). Where a test expects no confirmation, the
product's own deadline stands.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from shared.model.notices import PushNotice
from shared.model.requests import AttemptOutcome
from shared.store.attempts import Attempts
from shared.store.connection import connect
from shared.store.durable import WAIT_TIMEOUT_MS, ReplicasBehind, acknowledged
from shared.store.errors import REDIS_DOWN, StoreUnavailable
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from shared.store.receivers import receiver_client
from shared.store.streams import EventStream
from tests.integration.redis_group import wait_for
from tests.integration.redis_server import RedisServer
from tests.suites.store_suite import BK, _event

pytestmark = pytest.mark.integration

KEYS = Keys("gr:test")
#: The WAIT deadline of a client that expects the replica to confirm (under the socket timeouts).
CONFIRM_MS = 10_000


class Pair:
    """A primary and one replica of it."""

    def __init__(self, directory: Path) -> None:
        self.primary = RedisServer(directory / "primary")
        self.replica = RedisServer(
            directory / "replica", extra=("--replicaof", "127.0.0.1", str(self.primary.port))
        )

    def linked(self) -> bool:
        info = self.replica.client().info("replication")
        return info.get("master_link_status") == "up"


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    made = Pair(tmp_path)
    made.primary.start()
    made.replica.start()
    wait_for("the replica linked", made.linked)
    yield made
    made.replica.stop()
    made.primary.stop()


def _replica_read(pair: Pair) -> redis.Redis:
    return pair.replica.client()


def test_a_publish_returns_once_the_replica_holds_it(pair: Pair) -> None:
    client = connect(
        pair.primary.url, client_name="tests", min_replicas=1, wait_timeout_ms=CONFIRM_MS
    )
    stream = EventStream(client, KEYS)
    stream.publish(BK, _event("a"))
    stream.publish_many(BK, [_event("b"), _event("c")])
    # WAIT answered: the replica has the three entries now, without waiting for it here
    assert _replica_read(pair).xlen(KEYS.branch_events(BK)) == 3


def test_without_its_replica_a_publish_is_not_done(pair: Pair) -> None:
    client = connect(pair.primary.url, client_name="tests", min_replicas=1)
    stream = EventStream(client, KEYS)
    pair.replica.stop()
    with pytest.raises(ReplicasBehind) as raised:
        stream.publish(BK, _event("a"))
    assert isinstance(raised.value, REDIS_DOWN)  # every caller's outage path takes it
    with pytest.raises(ReplicasBehind):
        stream.publish_many(BK, [_event("b")])


def test_more_replicas_asked_than_linked_is_not_done(pair: Pair) -> None:
    client = connect(pair.primary.url, client_name="tests", min_replicas=2)
    with pytest.raises(ReplicasBehind, match="1 of 2"):
        EventStream(client, KEYS).publish(BK, _event("a"))


def test_zero_replicas_waits_for_none(pair: Pair) -> None:
    client = connect(pair.primary.url, client_name="tests", min_replicas=0)
    pair.replica.stop()
    with acknowledged(client) as same:
        assert same is client  # no pinned connection, no WAIT
    EventStream(client, KEYS).publish(BK, _event("a"))
    assert client.xlen(KEYS.branch_events(BK)) == 1


def _notice(delivery: str) -> PushNotice:
    return PushNotice(
        "team/gp", "https://git.example.com/a.git", "refs/heads/main", "a" * 40, delivery, 100.0
    )


def test_the_receivers_store_waits_for_the_replica(pair: Pair) -> None:
    """The receiver's 202 ``stored``: its per-thread connection WAITs on the same connection
    that ran the script; without the replica the delivery is StoreUnavailable (its 503)."""
    confirming = receiver_client(
        pair.primary.url,
        timeout_s=2 * CONFIRM_MS / 1000,
        min_replicas=1,
        wait_timeout_ms=CONFIRM_MS,
    )
    assert NoticeWriter(confirming, KEYS).store("team/gp", "d-1", [_notice("d-1")])
    key = KEYS.branch_notices(_notice("d-1").target.key)
    assert _replica_read(pair).xlen(key) == 1
    writer = NoticeWriter(receiver_client(pair.primary.url, min_replicas=1), KEYS)
    pair.replica.stop()
    with pytest.raises(StoreUnavailable):
        writer.store("team/gp", "d-2", [_notice("d-2")])
    with pytest.raises(StoreUnavailable):
        writer.store("team/gp", "", [_notice("d-3")])  # no delivery id: the other path


def test_the_branch_workers_ack_and_the_dispatchers_report_wait(pair: Pair) -> None:
    client = connect(
        pair.primary.url, client_name="tests", min_replicas=1, wait_timeout_ms=CONFIRM_MS
    )
    stream = EventStream(client, KEYS)
    stream.ensure_group(BK)
    stream.publish_many(BK, [_event("a"), _event("b")])
    entries = stream.read(BK, "c1", 10, None)
    assert len(entries) == 2
    attempts = Attempts(client, KEYS, "apply")
    assert attempts.report_once(BK, AttemptOutcome("t-1", "Delivered"))
    assert _replica_read(pair).xlen(KEYS.branch_outcomes(BK)) == 1
    stream.ack(BK, entries[:1])
    assert _replica_read(pair).xlen(KEYS.branch_events(BK)) == 1
    # nothing will confirm from here: a client with the product's own deadline
    unconfirmed = connect(pair.primary.url, client_name="tests", min_replicas=1)
    stream, attempts = EventStream(unconfirmed, KEYS), Attempts(unconfirmed, KEYS, "apply")
    pair.replica.stop()
    with pytest.raises(ReplicasBehind, match=f"within {WAIT_TIMEOUT_MS} ms"):
        stream.ack(BK, entries[1:])
    with pytest.raises(ReplicasBehind):
        attempts.report_once(BK, AttemptOutcome("t-2", "Delivered"))
    with pytest.raises(ReplicasBehind):
        attempts.report(BK, AttemptOutcome("t-3", "Delivered"))


def test_a_block_that_wrote_nothing_still_waits_for_the_replica(pair: Pair) -> None:
    """A retry whose script finds its write done (a report's guard set) writes nothing on its
    connection; its wait must still cover the first try's write, whatever a server's WAIT
    makes of a connection that wrote nothing (the fence before each WAIT is a replicated
    write): a replica that has not caught up (here: stopped) is waited for."""
    client = connect(
        pair.primary.url, client_name="tests", min_replicas=1, wait_timeout_ms=CONFIRM_MS
    )
    attempts = Attempts(client, KEYS, "apply")
    assert attempts.report_once(BK, AttemptOutcome("t-1", "Delivered"))
    replica = pair.replica.pid()
    os.kill(replica, signal.SIGSTOP)  # linked still, but it acknowledges nothing
    try:
        # the retry of another process (a fresh connection, which wrote nothing yet)
        again = Attempts(connect(pair.primary.url, client_name="retry", min_replicas=1), KEYS, "a")
        with pytest.raises(ReplicasBehind, match="0 of 1"):
            again.report_once(BK, AttemptOutcome("t-1", "Delivered"))  # the guard is set
    finally:
        os.kill(replica, signal.SIGCONT)
    assert not attempts.report_once(BK, AttemptOutcome("t-1", "Delivered"))  # awake: confirmed


def test_a_clients_own_wait_deadline_reaches_every_path(pair: Pair) -> None:
    """A client made with another WAIT deadline uses it in ``acknowledged``, on the receiver's
    per-thread connections, and in its twin (rq's client)."""
    pair.replica.stop()
    client = connect(pair.primary.url, client_name="tests", min_replicas=1, wait_timeout_ms=300)
    with pytest.raises(
        ReplicasBehind, match="0 of 1 replica\\(s\\) confirmed the write within 300 ms"
    ):
        EventStream(client, KEYS).publish(BK, _event("a"))
    twin = client.twin(decode_responses=False)
    assert (getattr(twin, "min_replicas", None), getattr(twin, "wait_timeout_ms", None)) == (1, 300)
    writer = NoticeWriter(
        receiver_client(pair.primary.url, min_replicas=1, wait_timeout_ms=300), KEYS
    )
    with pytest.raises(StoreUnavailable) as raised:
        writer.store("team/gp", "d-1", [_notice("d-1")])
    assert "within 300 ms" in str(raised.value.__cause__)
