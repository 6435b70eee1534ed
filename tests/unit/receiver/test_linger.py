"""Closing gracefully off the closing thread: FIN at once, close when the peer has (RFC 9112
9.6), over real socket pairs. Waits are on events (the linger thread reports every close)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from services.receiver.linger import Linger

#: A bound on waiting for the linger thread, for a hang to fail rather than block the run.
WAIT_S = 10.0


class Closes:
    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.event = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, sock: socket.socket) -> None:
        with self.lock:
            self.sockets.append(sock)
        self.event.set()

    def wait_for(self, sock: socket.socket) -> None:
        while True:
            with self.lock:
                if sock in self.sockets:
                    return
                self.event.clear()
            assert self.event.wait(WAIT_S), "the linger thread closed nothing"


@pytest.fixture
def pairs() -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    made: list[tuple[socket.socket, socket.socket]] = []
    yield made
    for ours, theirs in made:
        ours.close()
        theirs.close()


def _pair(pairs: list[tuple[socket.socket, socket.socket]]) -> tuple[socket.socket, socket.socket]:
    ours, theirs = socket.socketpair()
    pairs.append((ours, theirs))
    return ours, theirs


def test_fin_at_once_and_closed_when_the_peer_closes(pairs: list) -> None:
    closes = Closes()
    linger = Linger(timeout_s=3600, closed=closes)
    ours, theirs = _pair(pairs)
    linger.close(ours)
    theirs.settimeout(WAIT_S)
    assert theirs.recv(10) == b""  # FIN: the answer is complete for the client
    theirs.sendall(b"the rest of a body nobody read")  # drained, not answered with a reset
    assert ours.fileno() != -1 and not closes.sockets
    theirs.close()
    closes.wait_for(ours)
    assert ours.fileno() == -1


def test_a_peer_that_never_closes_is_closed_after_the_timeout(pairs: list) -> None:
    closes = Closes()
    linger = Linger(timeout_s=0.01, closed=closes)
    ours, _theirs = _pair(pairs)
    linger.close(ours)
    closes.wait_for(ours)
    assert ours.fileno() == -1


def test_a_peer_that_keeps_sending_is_closed_at_the_drain_cap(pairs: list) -> None:
    closes = Closes()
    linger = Linger(timeout_s=3600, max_drain=1000, closed=closes)
    ours, theirs = _pair(pairs)
    linger.close(ours)
    theirs.sendall(b"x" * 1000)
    closes.wait_for(ours)


def test_each_socket_lingers_on_its_own(pairs: list) -> None:
    """Three closing at once: the one whose peer closes goes at once, the others stay."""
    closes = Closes()
    linger = Linger(timeout_s=3600, closed=closes)
    made = [_pair(pairs) for _ in range(3)]
    for ours, _ in made:
        linger.close(ours)
    made[1][1].close()
    closes.wait_for(made[1][0])
    assert closes.sockets == [made[1][0]]
    for ours, theirs in (made[0], made[2]):
        theirs.close()
        closes.wait_for(ours)


def test_a_socket_already_reset_is_closed_at_once(pairs: list) -> None:
    closes = Closes()
    linger = Linger(closed=closes)
    ours, _ = _pair(pairs)
    ours.close()  # shutdown fails on a closed socket
    linger.close(ours)
    assert closes.sockets == [ours]


def test_nothing_is_opened_before_the_first_close() -> None:
    """gunicorn builds the worker in its master: a pipe opened there would leak per spawn."""
    linger = Linger()
    assert linger._wake is None and linger._thread is None


def test_finish_waits_for_what_lingers(pairs: list) -> None:
    closes = Closes()
    linger = Linger(timeout_s=3600, closed=closes)
    assert linger.finish(0.0)  # nothing lingers
    ours, theirs = _pair(pairs)
    linger.close(ours)
    assert not linger.finish(0.0)
    done = threading.Event()
    threading.Thread(target=lambda: linger.finish(WAIT_S) and done.set(), daemon=True).start()
    theirs.close()
    assert done.wait(WAIT_S)


def test_a_socket_handed_over_twice_lingers_once(pairs: list) -> None:
    closes = Closes()
    linger = Linger(timeout_s=3600, closed=closes)
    ours, theirs = _pair(pairs)
    linger.close(ours)
    linger.close(ours)
    theirs.close()
    closes.wait_for(ours)
    assert linger.finish(WAIT_S)
    assert closes.sockets == [ours]
