"""C9 (the reliability probe's Redis-outage finding), at the length issue 11 names: every
process rides out a Redis outage of a minute without exiting, and resumes.

``test_readiness.py`` takes Redis away from each process for as long as its ``/readyz`` needs to
notice; this test runs the four processes together, as the Procfile does, keeps Redis away for
a full minute (``OUTAGE_S``), checks that no process exited during it, and then
that each one is ready again once Redis is back and stops cleanly on SIGTERM. A retry budget
that runs out after some seconds (a bounded count of reconnects, a backoff that gives up) would
end a process inside the minute and fail here.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.integration.health.test_readiness import COMMANDS, WAIT_S, Running, kube, start
from tests.integration.redis_server import RedisServer, redis_server

pytestmark = pytest.mark.integration
__all__ = ["kube", "redis_server"]  # the fixtures, imported for pytest

#: The outage issue 11 asks every process to ride out.
OUTAGE_S = 60.0


def _status(running: Running, path: str) -> int:
    found = running.answer(path)  # fails the test, with its log, if the process has exited
    return 0 if found is None else found.status


def _answers(running: Running, status: int) -> Callable[[], bool]:
    """A condition: ``/readyz`` of ``running`` answers ``status``."""
    return lambda: _status(running, "/readyz") == status


def _alive(running: dict[str, Running]) -> None:
    for command, process in running.items():
        code = process.process.poll()
        assert code is None, (
            f"{command} exited ({code}) during the outage:\n" + (process.log.read_text()[-4000:])
        )


def test_every_process_rides_out_a_minute_without_redis(
    redis_server: RedisServer, kube: Path, tmp_path: Path
) -> None:
    running: dict[str, Running] = {}
    try:
        for command in COMMANDS:
            folder = tmp_path / command
            folder.mkdir()
            running[command] = start(command, redis_server, kube, folder)
        for command, process in running.items():
            wait_until(_answers(process, 200), WAIT_S, f"{command} ready")

        redis_server.stop()
        down_at = time.monotonic()
        for command, process in running.items():
            wait_until(_answers(process, 503), WAIT_S, f"{command} sees it")
        # The outage itself is what is under test: it lasts a minute whatever the processes do.
        # Waiting on each process ends early if it exits; one that exited at any point of the
        # minute is still exited at its end (nothing restarts it), so one check covers it all.
        end = down_at + OUTAGE_S
        for process in running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.process.wait(timeout=max(end - time.monotonic(), 0.0))
        _alive(running)

        redis_server.start()  # back, and empty
        for command, process in running.items():
            wait_until(_answers(process, 200), WAIT_S, f"{command} ready again")
        _alive(running)
    finally:
        codes = {command: process.stop() for command, process in running.items()}
    assert codes == dict.fromkeys(COMMANDS, 0), {
        c: running[c].log.read_text()[-2000:] for c, code in codes.items() if code != 0
    }


def test_every_process_stopped_during_an_outage_exits_cleanly(
    redis_server: RedisServer, kube: Path, tmp_path: Path
) -> None:
    """A SIGTERM that comes while Redis is away (a rollout during an outage) ends each process
    with status 0, not a traceback. Failed before (checked, branch worker): giving its leases
    back and leaving the registry went to Redis unguarded and the process exited with 1."""
    running: dict[str, Running] = {}
    try:
        for command in COMMANDS:
            folder = tmp_path / command
            folder.mkdir()
            running[command] = start(command, redis_server, kube, folder)
        for command, process in running.items():
            wait_until(_answers(process, 200), WAIT_S, f"{command} ready")
        redis_server.stop()
        for command, process in running.items():
            wait_until(_answers(process, 503), WAIT_S, f"{command} sees it")
    finally:
        codes = {command: process.stop() for command, process in running.items()}
    assert codes == dict.fromkeys(COMMANDS, 0), {
        c: running[c].log.read_text()[-3000:] for c, code in codes.items() if code != 0
    }
