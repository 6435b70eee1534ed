"""Clients that hold connections without taking part, against the receiver under gunicorn.

- N6 (probe 2026-12-06): a client that pipelines requests and never reads the answers held a
  pool thread for as long as it stayed connected (writes had no deadline). Each answer now
  has the read timeout to be taken; a client that does not take it is cut.
- N7: more silent connections than ``worker_connections`` made gunicorn stop accepting, so a
  delivery waited until silent ones timed out. At the limit the oldest silent connection is
  now closed to make room.

Each test runs a small receiver of its own (one worker, few threads or connections), so the
limit is reached with a handful of sockets; what the tests wait on is bounded by a client
timeout far below what the old behaviour would take (the read timeout, or for ever).
"""

from __future__ import annotations

import http.client
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.integration.receiver.conftest import Stack, running_stack
from tests.integration.receiver.rawhttp import address
from tests.unit.receiver import samples

pytestmark = pytest.mark.integration

#: Long enough for a loaded machine to answer; far shorter than "never" (N6) or the read
#: timeout the silent connections would otherwise be kept for (N7).
CLIENT_TIMEOUT_S = 20.0


def _status(
    url: str, method: str = "GET", body: bytes = b"", headers: dict[str, str] | None = None
) -> int:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=CLIENT_TIMEOUT_S)
    try:
        connection.request(method, parts.path, body=body, headers=headers or {})
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.fixture
def two_threads(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(
        tmp_path, receiver_workers="1", receiver_threads="2", receiver_read_timeout="2s"
    ) as running:
        yield running


def _hog_until_cut(url: str) -> bool:
    """Pipeline ``GET /metrics`` (answers of kilobytes) and never read: True once the server
    cuts the connection, False if sending stalls for the client timeout (a thread held)."""
    with socket.create_connection(address(url), timeout=CLIENT_TIMEOUT_S) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        batch = b"GET /metrics HTTP/1.1\r\nHost: receiver\r\n\r\n" * 200
        try:
            while True:
                sock.sendall(batch)
        except TimeoutError:
            return False
        except OSError:
            return True  # reset or broken pipe: the server closed it


def test_clients_that_never_read_their_answers_are_cut(two_threads: Stack) -> None:
    url = two_threads.gunicorn.url
    cut = [_hog_until_cut(url) for _ in range(2)]  # one after the other: each holds a thread
    assert cut == [True, True], "a client that reads nothing kept its thread"
    assert _status(url + "/healthz") == 200


@pytest.fixture
def forty_connections(tmp_path: Path) -> Iterator[Stack]:
    with running_stack(
        tmp_path,
        receiver_workers="1",
        receiver_connections="40",
        receiver_read_timeout="60s",
    ) as running:
        yield running


def test_more_silent_connections_than_the_limit_delay_no_delivery(
    forty_connections: Stack,
) -> None:
    stack = forty_connections
    hook = stack.receiver("github", "crowded", samples.REPO_URL, samples.SECRET.decode())
    silent = [socket.create_connection(address(stack.gunicorn.url)) for _ in range(100)]
    try:
        push = samples.github(samples.github_push(), delivery="beside-100-silent-connections")
        assert _status(hook, "POST", push.body, push.headers) == 202
        assert _status(stack.gunicorn.url + "/healthz") == 200
        closed = 0
        for sock in silent[:60]:  # the oldest: closed to make room, long before 60 s
            sock.settimeout(CLIENT_TIMEOUT_S)
            closed += sock.recv(1) == b""
        assert closed == 60
    finally:
        for sock in silent:
            sock.close()
