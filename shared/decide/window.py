"""Commit windows (M6): when a window of writes closes and becomes one commit.

A window opens at its first write and closes after ``commit_window`` with no new write
(rolling), after ``max_age`` whatever happens, or at once when something must be published
first (Q6). ``commit_window == 0`` means a commit per write.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Window:
    """An open window: when it opened and when its last write was decided."""

    opened_at: float
    last_write_at: float
    writes: int = 1

    def with_write(self, now: float) -> Window:
        """The window after one more write at ``now`` (the rolling timer restarts)."""
        return replace(self, last_write_at=now, writes=self.writes + 1)


def open_window(now: float) -> Window:
    """A window opened by a write at ``now``."""
    return Window(opened_at=now, last_write_at=now)


def closes_at(window: Window, commit_window: float, max_age: float) -> float:
    """The moment the window closes if no further write arrives."""
    return min(window.last_write_at + commit_window, window.opened_at + max_age)


def is_due(window: Window, now: float, commit_window: float, max_age: float) -> bool:
    """True when the window must close now."""
    return now >= closes_at(window, commit_window, max_age)
