"""Repeated failures of one branch, logged with backoff (issue 26 §5).

A branch whose start or pass keeps failing (a repository that does not exist, refused
credentials, a remote that refuses every push) is given back and taken again every few seconds.
Logging each failure in full buried everything else: an ERROR with a 2 KB traceback every 5 s
per branch. So: the first failure of a run of failures is an ERROR with its traceback; after it,
at most one WARNING per ``every`` seconds with the latest error and how many failures there
were since the last line (``failures``); the first pass that works ends the run with an INFO.
The GitTargets of the branch show the latest error meanwhile (T4), so nothing is hidden.

The clock is injected: tests step it instead of waiting.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from shared.model.ids import BranchKey

#: Seconds between two WARNINGs about the same branch's failures.
EVERY_S = 60.0


@dataclass(slots=True)
class _Run:
    """A branch's current run of failures."""

    first_at: float
    logged_at: float
    total: int = 1
    unlogged: int = 0


class FailureLog:
    """Backoff for the failure lines of each branch (jobs run on pool threads: one lock)."""

    def __init__(
        self, logger: logging.Logger, clock: Callable[[], float], every_s: float = EVERY_S
    ) -> None:
        self._log = logger
        self._clock = clock
        self._every_s = every_s
        self._runs: dict[BranchKey, _Run] = {}
        self._lock = threading.Lock()

    def failed(self, bk: BranchKey, what: str, err: BaseException) -> None:
        """One failure of the branch (``what``: "cannot start", say), raised as ``err``."""
        now = self._clock()
        with self._lock:
            run = self._runs.get(bk)
            if run is None:
                self._runs[bk] = _Run(first_at=now, logged_at=now)
            else:
                run.total += 1
                run.unlogged += 1
                due = now - run.logged_at >= self._every_s
                count, total = run.unlogged, run.total
                if due:
                    run.logged_at, run.unlogged = now, 0
        if run is None:
            extra = {"branch": bk, "failures": 1}
            self._log.error("branch %s: %s; giving it back", bk, what, exc_info=err, extra=extra)
        elif due:
            self._log.warning(
                "branch %s: %s, %d more times since the last report (%d in a row): %s: %s",
                bk,
                what,
                count,
                total,
                type(err).__name__,
                err,
                extra={"branch": bk, "failures": total},
            )

    def succeeded(self, bk: BranchKey) -> None:
        """A pass over the branch worked: its run of failures, if any, ends."""
        with self._lock:
            run = self._runs.pop(bk, None)
        if run is not None:
            self._log.info(
                "branch %s works again after %d failures",
                bk,
                run.total,
                extra={"branch": bk, "failures": run.total},
            )

    def forget(self, bk: BranchKey) -> None:
        """The branch is retired: nothing more will be said of it."""
        with self._lock:
            self._runs.pop(bk, None)
