"""The receiver's per-thread Redis connections keep what redis-py's pool guaranteed (R3, R4).

``shared.store.direct.ThreadConnections`` sends the receiver's one command per delivery on a
connection of its own thread, without the pool. These tests pin that nothing was lost with
the pool: a connection Redis dropped is re-made and the delivery stored (R4), an error reply
leaves the connection usable, threads never share a connection, and a Redis that does not
answer is ``StoreUnavailable`` (the receiver's 503, R3) after one retry, not redis-py's minute.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
import redis

from shared.model.notices import PushNotice
from shared.settings import Settings
from shared.store.direct import ThreadConnections
from shared.store.errors import StoreUnavailable
from shared.store.keys import Keys
from shared.store.notices import NoticeWriter
from shared.store.receivers import receiver_client

pytestmark = pytest.mark.integration

URL = "https://git.example.com/team/apps.git"


def _notice(delivery: str) -> PushNotice:
    return PushNotice("team/gp", URL, "refs/heads/main", "a" * 40, delivery, 100.0)


@pytest.fixture
def client() -> Iterator[redis.Redis]:
    """The receiver's own client (short timeouts, one retry)."""
    made = receiver_client(Settings.from_env().redis_url)
    yield made
    made.close()


def _my_connection_id(direct: ThreadConnections) -> int:
    return int(direct.execute("CLIENT", "ID"))


def test_a_connection_redis_dropped_is_remade_and_the_delivery_stored(
    client: redis.Redis, redis_client: redis.Redis, key_prefix: str
) -> None:
    """R4: Redis closes the writer's connection between two deliveries (a restart, an idle
    timeout, CLIENT KILL); the second delivery is still stored, on a new connection."""
    writer = NoticeWriter(client, Keys(key_prefix))
    assert writer.store("team/gp", "d-1", [_notice("d-1")])
    direct = writer._direct  # the connection the writer just used
    before = _my_connection_id(direct)
    assert redis_client.client_kill_filter(_id=str(before)) == 1
    assert writer.store("team/gp", "d-2", [_notice("d-2")])
    assert _my_connection_id(direct) != before
    key = Keys(key_prefix).branch_notices(_notice("d-2").target.key)
    assert redis_client.xlen(key) == 2


def test_an_error_reply_leaves_the_connection_usable(client: redis.Redis) -> None:
    """A reply that is an error (a script Redis does not know, a wrong command) is raised,
    and the same connection serves the next command."""
    direct = ThreadConnections(client)
    before = _my_connection_id(direct)
    with pytest.raises(redis.exceptions.NoScriptError):
        direct.execute("EVALSHA", "0" * 40, 0)
    with pytest.raises(redis.ResponseError):
        direct.execute("NOSUCHCOMMAND")
    assert direct.execute("PING") in (True, "PONG")
    assert _my_connection_id(direct) == before


def test_threads_never_share_a_connection(client: redis.Redis) -> None:
    """Each thread has a connection of its own (a shared socket would interleave replies)."""
    direct = ThreadConnections(client)
    ids: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(4)

    def run() -> None:
        barrier.wait()
        found = _my_connection_id(direct)
        with lock:
            ids.append(found)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(ids)) == 4
    assert _my_connection_id(direct) not in ids


@pytest.fixture
def silent() -> Iterator[tuple[socket.socket, int]]:
    """A TCP port that completes the handshake (backlog) and then says nothing."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener, listener.getsockname()[1]


def test_a_silent_redis_is_unavailable_after_one_retry(
    silent: tuple[socket.socket, int],
) -> None:
    """R3: storing against a Redis that never answers raises StoreUnavailable (the 503)
    after the attempt and one retry, each bounded by the receiver's timeout: two
    connections, never redis-py's default of ten attempts."""
    listener, port = silent
    client = receiver_client(f"redis://127.0.0.1:{port}/0", timeout_s=0.3)
    writer = NoticeWriter(client, Keys("t"))
    with pytest.raises(StoreUnavailable):
        writer.store("team/gp", "d-1", [_notice("d-1")])
    listener.setblocking(False)
    accepted = []
    while True:
        try:
            accepted.append(listener.accept()[0])
        except BlockingIOError:
            break
    for conn in accepted:
        conn.close()
    assert len(accepted) == 2
