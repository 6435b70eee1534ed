"""C3 (reliability probe), T4: every git network call has a deadline. A host that accepts the
connection and never answers fails the fetch and the push within the bound, as GitTemporary
(the branch tries again later), instead of hanging the call for ever.

Failed before the fix: fetch and push ran with no timeout and no low-speed limit; the probe saw
a push still hanging after 2 min 36 s. Here each call runs on a thread joined with a deadline,
so on the old code the test fails instead of hanging.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shared.git.errors import GitTemporary
from shared.git.workspace import Workspace
from tests.configs import DEFAULT_COMMITTER
from tests.integration.git.hung_host import HungHost

pytestmark = pytest.mark.integration

#: The bound the test sets, and how long past it the test waits for the call to come back.
TIMEOUT_S = 3.0
SLACK_S = 20.0


@pytest.fixture
def host() -> Iterator[HungHost]:
    hung = HungHost()
    yield hung
    hung.close()


def _returns_within(call: Callable[[], object], limit: float) -> tuple[BaseException | None, float]:
    """Run ``call`` on a thread; the exception it raised (None if none) and how long it took.
    Fails the test if it has not returned after ``limit`` seconds."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            call()
        except BaseException as err:  # handed back to the test
            raised[0] = err

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"the git call still hangs after {limit}s"
    return raised[0], time.monotonic() - started


def test_a_fetch_from_a_hung_host_fails_within_the_bound(tmp_path: Path, host: HungHost) -> None:
    ws = Workspace(tmp_path / "ws", host.url("r"), "main", timeout=TIMEOUT_S)
    error, took = _returns_within(ws.fetch, TIMEOUT_S + SLACK_S)
    assert isinstance(error, GitTemporary)
    assert host.accepted >= 1  # it did reach the host: the hang was after connecting
    assert took < TIMEOUT_S + SLACK_S


def test_a_push_to_a_hung_host_fails_within_the_bound(tmp_path: Path, host: HungHost) -> None:
    ws = Workspace(tmp_path / "ws", host.url("r"), "main", timeout=TIMEOUT_S)
    ws.reset(None)
    ws.write("apps/cm.yaml", b"a: 1\n")
    ws.commit("one", DEFAULT_COMMITTER)
    error, _ = _returns_within(lambda: ws.push(None), TIMEOUT_S + SLACK_S)
    assert isinstance(error, GitTemporary)
    assert host.closed.wait(SLACK_S), "git never let go of the connection"


def test_git_itself_gives_up_on_a_silent_host(tmp_path: Path, host: HungHost) -> None:
    """The low-speed limit alone (no process deadline to speak of) ends the call: git's own
    ``GIT_HTTP_LOW_SPEED_TIME``, which every call's environment carries."""
    env = {"GIT_HTTP_LOW_SPEED_TIME": "2"}
    ws = Workspace(tmp_path / "ws", host.url("r"), "main", env=env, timeout=600)
    error, took = _returns_within(ws.fetch, SLACK_S)
    assert isinstance(error, GitTemporary)
    assert took >= 1.5  # it waited for the silence, then gave up
