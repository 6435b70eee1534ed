"""``make up``'s output survives its reader, and its going stops ``make up`` once.

Outside check 9 (issue 23).

On a real pipe: a write after the reader closed must neither raise (it did, inside honcho's
signal handler) nor be the only way to find out (an idle ``make up`` writes nothing).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import TextIO

import pytest
from honcho.manager import KILL_WAIT

from sandbox.terminal import GRACE_S, Helper, Manager, Output

#: Bound on the watch thread seeing the closed reader (an event is awaited, not a sleep).
SEEN_S = 30.0


@pytest.fixture
def pipe() -> Iterator[tuple[int, TextIO]]:
    """A pipe: its read end, and its write end as a text stream."""
    read, write = os.pipe()
    stream = os.fdopen(write, "w")
    yield read, stream
    stream.close()
    with contextlib.suppress(OSError):  # the test closed it
        os.close(read)


def test_a_write_after_the_reader_closed_stops_once_and_never_raises(
    pipe: tuple[int, TextIO],
) -> None:
    read, stream = pipe
    gone: list[str] = []
    output = Output(stream, lambda: gone.append("gone"))
    output.write("before\n")
    output.flush()
    assert os.read(read, 100) == b"before\n" and not output.gone
    os.close(read)
    for _ in range(3):
        output.write("after\n")
        output.flush()
    assert output.gone and gone == ["gone"]
    assert not output.isatty()


def test_the_watch_sees_the_reader_close_without_a_write(pipe: tuple[int, TextIO]) -> None:
    read, stream = pipe
    seen = threading.Event()
    output = Output(stream, seen.set)
    watch = output.watch()
    assert not output.gone
    os.close(read)
    assert seen.wait(SEEN_S), "the reader's going was not seen"
    watch.join(SEEN_S)
    assert output.gone and not watch.is_alive()
    output.write("nobody reads this\n")  # the descriptor is /dev/null now: no error
    stream.flush()


def test_a_reentrant_write_loses_the_line_not_the_caller() -> None:
    """A signal handler printing while the interrupted code printed: the buffer refuses."""

    class Busy:
        def write(self, text: str) -> int:
            raise RuntimeError("reentrant call inside <_io.BufferedWriter name='<stdout>'>")

        def flush(self) -> None:
            raise RuntimeError("reentrant call")

    gone: list[str] = []
    output = Output(Busy(), lambda: gone.append("gone"))  # type: ignore[arg-type]
    output.write("line\n")
    output.flush()
    assert not output.gone and gone == []


def test_a_stop_before_a_process_reported_its_pid_skips_it(pipe: tuple[int, TextIO]) -> None:
    """Ctrl-C while the processes start: honcho's own stop read every process's pid and
    raised KeyError inside its signal handler, ending its loop with nothing stopped."""
    _, stream = pipe
    manager = Manager(Output(stream, lambda: None))
    manager.add_process("early", "true")
    manager.add_process("late", "true")
    manager._processes["early"]["pid"] = 2**22 + 1  # beyond pid_max: nobody to signal
    sent: list[int] = []
    manager._procmgr = SimpleNamespace(terminate=sent.append, kill=sent.append)
    manager.terminate()
    assert sent == [2**22 + 1]
    assert isinstance(manager._processes["late"]["obj"], Helper)


def test_sigkill_waits_the_grace_a_container_gets(pipe: tuple[int, TextIO]) -> None:
    """honcho SIGKILLs 5 s after the first process stopped; on a loaded CI machine the
    dispatcher's warm shutdown (rq) took longer and ``make up`` reported it unclean. The
    grace is Kubernetes' default (the chart's): honcho's loop asks to kill from its 5 s on,
    and nothing is killed until the grace has passed since the first ask."""
    _, stream = pipe
    now = [100.0]
    manager = Manager(Output(stream, lambda: None), grace=GRACE_S, clock=lambda: now[0])
    manager.add_process("slow", "true")
    manager._processes["slow"]["pid"] = 2**22 + 2
    killed: list[int] = []
    manager._procmgr = SimpleNamespace(terminate=lambda pid: None, kill=killed.append)
    manager.kill()  # honcho's loop, KILL_WAIT (5 s) after the first stop
    now[0] += GRACE_S - KILL_WAIT - 0.1
    manager.kill()
    assert killed == []
    now[0] += 0.1
    manager.kill()
    assert killed == [2**22 + 2]
