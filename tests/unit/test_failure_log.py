"""Repeated failures of one branch are logged with backoff (issue 26 §5): the first as an
ERROR with its traceback, then at most one WARNING a minute with the count, an INFO when the
branch works again; the clock is stepped, never waited on."""

from __future__ import annotations

import logging

import pytest

from services.branch_worker.failures import EVERY_S, FailureLog
from shared.model.ids import BranchKey

BK, OTHER = BranchKey("bk-1"), BranchKey("bk-2")


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def _err() -> OSError:
    try:
        raise OSError("repository not found")
    except OSError as err:
        return err


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, bool]]:
    return [(r.levelname, r.getMessage(), r.exc_info is not None) for r in caplog.records]


def test_one_error_then_one_warning_a_minute_with_the_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    failures = FailureLog(logging.getLogger("test.failures"), clock)
    caplog.set_level(logging.INFO, "test.failures")
    for _ in range(13):  # every 5 s for a minute, as the report saw it
        failures.failed(BK, "cannot start", _err())
        clock.now += 5
    lines = _lines(caplog)
    assert len(lines) == 2
    assert lines[0] == ("ERROR", "branch bk-1: cannot start; giving it back", True)
    level, message, traceback = lines[1]
    assert (level, traceback) == ("WARNING", False)
    assert "12 more times since the last report (13 in a row)" in message
    assert "OSError: repository not found" in message
    assert caplog.records[1].failures == 13  # type: ignore[attr-defined]

    caplog.clear()
    failures.failed(BK, "cannot start", _err())  # 5 s after the warning: nothing
    assert _lines(caplog) == []
    clock.now += EVERY_S
    failures.failed(BK, "cannot start", _err())
    assert [line[0] for line in _lines(caplog)] == ["WARNING"]
    assert "2 more times since the last report (15 in a row)" in _lines(caplog)[0][1]


def test_a_branch_that_works_again_says_so_and_starts_a_new_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    failures = FailureLog(logging.getLogger("test.failures"), clock)
    caplog.set_level(logging.INFO, "test.failures")
    failures.failed(BK, "cannot start", _err())
    failures.failed(BK, "cannot start", _err())
    failures.succeeded(BK)
    failures.succeeded(BK)  # nothing more to say
    failures.failed(BK, "failed (to start over)", _err())
    assert [(level, tb) for level, _, tb in _lines(caplog)] == [
        ("ERROR", True),
        ("INFO", False),
        ("ERROR", True),
    ]
    assert _lines(caplog)[1][1] == "branch bk-1 works again after 2 failures"


def test_each_branch_has_its_own_run(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    failures = FailureLog(logging.getLogger("test.failures"), clock)
    caplog.set_level(logging.INFO, "test.failures")
    failures.failed(BK, "cannot start", _err())
    failures.failed(OTHER, "cannot start", _err())
    assert [line[0] for line in _lines(caplog)] == ["ERROR", "ERROR"]
