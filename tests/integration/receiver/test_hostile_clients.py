"""Clients that misbehave at the HTTP level, against the receiver under a real gunicorn.

- C5 (R1): slow clients (slowloris) neither stop deliveries nor ``/healthz``, and are cut
  within the documented bound (docs/receiver.md "Slow and idle clients").
- W1 (R3): a malformed chunked body is a client error: 400 ``malformed``, no traceback.
- W2 (R3, docs/receiver.md "Every answer is JSON"): what gunicorn refuses before the app runs
  (too many or too large headers, an overlong request line, a bad request) is answered with the
  same JSON ``{"status", "reason"}`` as everything else.
"""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

import pytest

from shared.settings import Settings
from tests.integration.receiver.conftest import Stack
from tests.integration.receiver.rawhttp import Reply, SlowClient, exchange, parse_reply
from tests.unit.receiver import samples

pytestmark = pytest.mark.integration

#: The receiver's defaults, as a user runs it (the stack sets no read timeout of its own).
READ_TIMEOUT_S = Settings().receiver_read_timeout.total_seconds()
#: How long an answer may take while the slow clients hold their connections: far below the
#: read timeout, so an answer that merely waited for a slow client to be cut fails the test.
ANSWER_WITHIN_S = 3.0
#: Slack for the server's own housekeeping (gunicorn checks its timers once a second) and a
#: busy machine.
SLACK_S = 4.0
#: An idle connection waits for its first byte in gunicorn's poller for the read timeout,
#: checked once a second (services/receiver/worker.py).
IDLE_CUT_S = READ_TIMEOUT_S + 1.0
#: Idle connections: twice the stack's threads (2 workers x 16), so that however gunicorn's
#: two workers share them out, a worker is very likely to hold 16 or more (all its threads,
#: before the change); and a few deliveries, each on a connection of its own, so that one of
#: them very likely lands on such a worker whichever accepts it.
IDLE_CONNECTIONS = 64
DELIVERIES = 3


def _request(path: str, headers: list[tuple[str, str]] | None = None, body: bytes = b"") -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: receiver"]
    lines += [f"{name}: {value}" for name, value in headers or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _assert_json(reply: Reply, code: int, status: str) -> None:
    assert reply.code == code, reply
    assert reply.headers["content-type"] == "application/json", reply
    body = reply.json()
    assert set(body) == {"status", "reason"} and body["status"] == status, body


def _timed(
    url: str, method: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, float]:
    """The status of one request on a new connection, and how long its answer took."""
    parts = urlsplit(url)
    started = time.monotonic()
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=ANSWER_WITHIN_S)
    try:
        connection.request(method, parts.path, body=body, headers=headers or {})
        status = connection.getresponse().status
    finally:
        connection.close()
    return status, time.monotonic() - started


def test_ten_slow_clients_neither_stop_deliveries_nor_health_and_are_cut(stack: Stack) -> None:
    """C5: five connections trickle their headers and five their body (after a declared
    Content-Length of 60,000, within the limit), a byte every 0.5 s: more than a worker had
    threads before. A signed push and /healthz are still answered at once, and every slow
    connection is cut by the server within the read timeout, with a JSON 408."""
    hook = stack.receiver("github", "slowloris", samples.REPO_URL, samples.SECRET.decode())
    path = urlsplit(hook).path
    slow_headers = _request(path, [("Content-Type", "application/json")])[:-4] + b"\r\nX-Slow: "
    slow_body = _request(path, [("Content-Type", "application/json"), ("Content-Length", "60000")])
    clients = [SlowClient(hook, slow_headers).start() for _ in range(5)]
    clients += [SlowClient(hook, slow_body).start() for _ in range(5)]
    try:
        for client in clients:  # each has been held open past two of its drips
            assert client.dripping.wait(10), "a slow client could not send"
        assert not any(c.closed.is_set() for c in clients), "cut before the read timeout"
        push = samples.github(samples.github_push(), delivery="while-slow-clients-wait")
        status, took = _timed(hook, "POST", push.body, push.headers)
        assert (status, took < ANSWER_WITHIN_S) == (202, True), took
        status, took = _timed(stack.gunicorn.url + "/healthz", "GET")
        assert (status, took < ANSWER_WITHIN_S) == (200, True), took
        for client in clients:
            assert client.closed.wait(READ_TIMEOUT_S + SLACK_S), "a slow client is still open"
    finally:
        for client in clients:
            client.stop()
    for client in clients:
        assert client.lasted() <= READ_TIMEOUT_S + SLACK_S, client.lasted()
        assert client.received, "closed without an answer"
        _assert_json(parse_reply(bytes(client.received)), 408, "timeout")


def test_a_body_trickled_after_its_answer_is_cut_too(stack: Stack) -> None:
    """C5: a body declared over the limit is answered 413 at once; gunicorn then reads the rest
    to reuse the connection, and a client trickling it is cut within the same read deadline
    (gunicorn's own drain bound is checked only between 1 KiB reads)."""
    hook = stack.receiver("github", "slowdrain", samples.REPO_URL, samples.SECRET.decode())
    headers = [("Content-Type", "application/json"), ("Content-Length", "100000")]
    client = SlowClient(hook, _request(urlsplit(hook).path, headers)).start()
    try:
        assert client.closed.wait(READ_TIMEOUT_S + SLACK_S), "the slow body is still open"
    finally:
        client.stop()
    assert client.lasted() <= READ_TIMEOUT_S + SLACK_S
    _assert_json(parse_reply(bytes(client.received)), 413, "too_large")


def test_an_idle_connection_is_closed(stack: Stack) -> None:
    """C5: a connection that never sends a byte is closed by the server within the bound."""
    client = SlowClient(stack.gunicorn.url, b"", drip=b"").start()
    try:
        assert client.closed.wait(IDLE_CUT_S + SLACK_S), "an idle connection is still open"
    finally:
        client.stop()
    assert client.lasted() <= IDLE_CUT_S + SLACK_S


def test_idle_connections_hold_no_thread(stack: Stack) -> None:
    """C5: 64 connections that say nothing (twice the two workers' 32 threads) do not delay
    deliveries on new connections: each is answered at once, while they are all still open.
    gunicorn's own worker gave each new connection a thread that waited 5 s for its first
    byte, so a delivery accepted by a worker holding 16 of them waited for one to give up."""
    hook = stack.receiver("github", "idlers", samples.REPO_URL, samples.SECRET.decode())
    idle = [SlowClient(stack.gunicorn.url, b"", drip=b"").start() for _ in range(IDLE_CONNECTIONS)]
    try:
        for n in range(DELIVERIES):
            push = samples.github(samples.github_push(), delivery=f"beside-idle-connections-{n}")
            status, took = _timed(hook, "POST", push.body, push.headers)
            assert (status, took < ANSWER_WITHIN_S) == (202, True), (n, took)
        status, took = _timed(stack.gunicorn.url + "/healthz", "GET")
        assert (status, took < ANSWER_WITHIN_S) == (200, True), took
        assert not any(c.closed.is_set() for c in idle), "an idle connection was cut early"
        for client in idle:
            assert client.closed.wait(IDLE_CUT_S + SLACK_S), "an idle connection is still open"
    finally:
        for client in idle:
            client.stop()


def test_a_malformed_chunked_body_is_400_without_a_traceback(stack: Stack) -> None:
    """W1: a chunk size of ``zz`` can never be read: 400 malformed (not 503 "try again"), and
    the receiver logs no traceback for it."""
    hook = stack.receiver("github", "chunky", samples.REPO_URL, samples.SECRET.decode())
    headers = [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")]
    before = len(stack.gunicorn.lines)
    reply = exchange(hook, _request(urlsplit(hook).path, headers, b"zz\r\nabc\r\n0\r\n\r\n"))
    _assert_json(reply, 400, "malformed")
    logged = "".join(stack.gunicorn.lines[before:])
    assert "Traceback" not in logged and '"ERROR"' not in logged, logged


@pytest.mark.parametrize(
    ("name", "code", "status"),
    [
        ("101 headers", 431, "too_large"),
        ("a 10 kB header", 431, "too_large"),
        ("a 5,000-byte request line", 414, "too_large"),
        ("Content-Length: -5", 400, "malformed"),
        ("Content-Length and Transfer-Encoding", 400, "malformed"),
        ("a NUL in a header", 400, "malformed"),
        ("not HTTP at all", 400, "malformed"),
    ],
)
def test_what_gunicorn_refuses_is_answered_as_json(
    stack: Stack, name: str, code: int, status: str
) -> None:
    """W2: gunicorn's own limits and parse errors, before the app runs, in the documented JSON."""
    path = "/hook/" + "0" * 64
    requests = {
        "101 headers": _request(path, [(f"X-H{i}", "1") for i in range(101)]),
        "a 10 kB header": _request(path, [("X-GitHub-Delivery", "d" * 10_000)]),
        "a 5,000-byte request line": _request(path + "?" + "q" * 5000),
        "Content-Length: -5": _request(path, [("Content-Length", "-5")]),
        "Content-Length and Transfer-Encoding": _request(
            path, [("Content-Length", "5"), ("Transfer-Encoding", "chunked")], b"0\r\n\r\n"
        ),
        "a NUL in a header": _request(path, [("X-GitHub-Event", "pu\x00sh")]),
        "not HTTP at all": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    }
    before = len(stack.gunicorn.lines)
    _assert_json(exchange(stack.gunicorn.url, requests[name]), code, status)
    logged = "".join(stack.gunicorn.lines[before:])
    assert "Traceback" not in logged, logged
