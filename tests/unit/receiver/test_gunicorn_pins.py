"""Every gunicorn internal the receiver's worker touches, pinned (issue 25: stock gunicorn).

``services.receiver.worker.ReceiverWorker`` is gunicorn's ``gthread`` worker with four methods
extended (``accept``, ``handle``, ``handle_request``, ``_cap_keepalive``), one documented hook
(``handle_error``) and a connection class whose ``close`` is extended. What those rely on of
gunicorn's own (attributes of the worker and of ``TConn``, the pending-connection queue that
``murder_pending`` expires, ``on_pending_socket_readable``) is checked here on a real worker
object over real sockets, so an upgrade that renames or reshapes any of it fails this file in
a second instead of a receiver in production.
"""

from __future__ import annotations

import inspect
import logging
import selectors
import socket
import time
from collections import deque
from collections.abc import Iterator

import gunicorn
import pytest
from gunicorn.config import Config
from gunicorn.workers.gthread import TConn, ThreadWorker

from services.receiver.deadline import DeadlineSocket
from services.receiver.worker import Conn, ReceiverWorker

#: The gunicorn release line these pins were read from (constraints.txt pins 27.0.1).
MAJOR = "27"


class _Log:
    """The least of gunicorn's logger a worker needs outside an arbiter."""

    def __getattr__(self, name: str) -> object:
        return getattr(logging.getLogger("gunicorn-pins"), name)

    def access(self, *args: object) -> None:
        """gunicorn's access log, called after every answer (the stdlib logger has none: its
        AttributeError sent the pins' answered request down gunicorn's error path)."""


@pytest.fixture
def worker() -> Iterator[ReceiverWorker]:
    cfg = Config()
    built = ReceiverWorker(age=1, ppid=0, sockets=[], app=None, timeout=30, cfg=cfg, log=_Log())
    built.poller = selectors.DefaultSelector()  # what init_process makes
    yield built
    built.poller.close()
    built.tmp.close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(True)
    yield server
    server.close()


def _connect(listener: socket.socket) -> socket.socket:
    return socket.create_connection(listener.getsockname())


def test_the_release_line_is_the_one_pinned() -> None:
    assert gunicorn.__version__.split(".")[0] == MAJOR


def test_the_methods_extended_keep_their_signatures() -> None:
    expected = {
        "accept": ["self", "listener"],
        "handle": ["self", "conn"],
        "handle_request": ["self", "req", "conn"],
        "handle_error": ["self", "req", "client", "addr", "exc"],
        "_cap_keepalive": ["self", "deadline"],
        "on_pending_socket_readable": ["self", "conn", "client"],
        "murder_pending": ["self"],
        "run": ["self"],
    }
    for name, params in expected.items():
        assert list(inspect.signature(getattr(ThreadWorker, name)).parameters) == params, name
    assert list(inspect.signature(TConn.close).parameters) == ["self", "graceful"]
    assert list(inspect.signature(TConn.__init__).parameters) == [
        "self", "cfg", "sock", "client", "server"
    ]  # fmt: skip


def test_the_worker_has_the_attributes_the_subclass_reads(worker: ReceiverWorker) -> None:
    assert isinstance(worker.pending_conns, deque) and not worker.pending_conns
    assert isinstance(worker.keepalived_conns, deque)
    assert worker.nr_conns == 0
    assert worker.worker_connections == worker.cfg.worker_connections
    assert not worker.cfg.is_ssl  # no certfile: plain sockets, a Linger


def test_a_silent_connection_waits_in_the_poller_and_expires_as_gunicorn_expires_it(
    worker: ReceiverWorker, listener: socket.socket
) -> None:
    client = _connect(listener)
    try:
        worker.accept(listener)
        (conn,) = worker.pending_conns
        assert isinstance(conn, Conn) and worker.nr_conns == 1
        assert conn.initialized is False and conn.data_ready is False
        assert worker.poller.get_key(conn.sock).data.func == worker.on_pending_socket_readable
        conn.timeout = time.monotonic() - 1  # its read timeout is up
        worker.murder_pending()
        assert worker.nr_conns == 0 and not worker.pending_conns
        client.settimeout(5)
        assert client.recv(1) == b""  # closed by the server
    finally:
        client.close()


def test_at_the_limit_the_oldest_silent_connection_makes_room(
    worker: ReceiverWorker, listener: socket.socket
) -> None:
    """N7 (probe 2026-12-06): gunicorn stops accepting at ``worker_connections``; the worker
    closes the oldest connection that has sent nothing instead, and keeps the newest."""
    worker.worker_connections = 3
    clients = [_connect(listener) for _ in range(5)]
    try:
        for _ in clients:
            worker.accept(listener)
        assert worker.nr_conns == 2 and worker.idle_closed == 3
        assert worker.nr_conns < worker.worker_connections  # gunicorn keeps accepting
        for client in clients[:3]:
            client.settimeout(5)
            assert client.recv(1) == b""
        for client in clients[3:]:
            client.setblocking(False)
            with pytest.raises(BlockingIOError):  # still open, nothing said
                client.recv(1)
    finally:
        for client in clients:
            client.close()


def test_handle_gives_the_parser_a_deadline_socket_before_gunicorn_initialises(
    worker: ReceiverWorker, listener: socket.socket
) -> None:
    """``handle`` wraps ``conn.sock`` while ``conn.initialized`` is False, so gunicorn's
    ``TConn.init`` builds its parser over the ``DeadlineSocket``."""
    client = _connect(listener)
    try:
        worker.accept(listener)
        (conn,) = worker.pending_conns
        client.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        worker.pending_conns.clear()
        worker.poller.unregister(conn.sock)
        conn.data_ready = True
        worker.wsgi = _ok
        assert worker.handle(conn) is False  # answered; the client asked to close
        assert isinstance(conn.sock, DeadlineSocket)
        assert conn.parser.unreader.sock is conn.sock
        client.settimeout(5)
        assert client.recv(64).startswith(b"HTTP/1.1 200 ")
    finally:
        client.close()


def _ok(environ: dict[str, object], start_response: object) -> list[bytes]:
    start_response("200 OK", [("Content-Length", "2")])  # type: ignore[operator]
    return [b"ok"]
