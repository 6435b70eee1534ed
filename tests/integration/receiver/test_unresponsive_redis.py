"""A Redis that accepts connections but never answers is a 503 in time (R3).

Facts: ../shared/facts/webhooks-git-libs.md §3.4 (redis-py 8 retries a timed-out command ten
times by default, a minute with its 5 s socket timeout) and §1.1 (GitHub fails a delivery
after 10 s). The stand-in is a listening socket nobody reads from, on loopback.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from shared.store.errors import StoreUnavailable
from shared.store.keys import Keys
from shared.store.receivers import ReceiverDirectory, receiver_client

pytestmark = pytest.mark.integration


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that completes the handshake (backlog) and then says nothing."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_a_silent_redis_fails_within_two_timeouts(silent_server: int) -> None:
    """One attempt and one retry, each bounded by the timeout: never redis-py's minute."""
    client = receiver_client(f"redis://127.0.0.1:{silent_server}/0", timeout_s=0.3)
    directory = ReceiverDirectory(client, Keys("t"))
    started = time.monotonic()
    with pytest.raises(StoreUnavailable):
        directory.lookup("ab" * 32)
    assert time.monotonic() - started < 2.0
    assert directory.reachable() is False
