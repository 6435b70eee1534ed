"""Quietness of a branch (Q2-Q4).

A branch is quiet only when no window is open, nothing is pending on any worker of the branch,
and no push is in flight (Q3). Requests go out only on a quiet branch (Q4), and a CatchUp waits
``quietPeriod`` after the last decided write, wherever in a wake that write happened (Q2).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BranchView:
    """What the decision needs of a branch's published state."""

    tip: str | None
    windows_open: int
    pending_total: int
    push_in_flight: bool
    last_write_at: float


def is_quiet(branch: BranchView) -> bool:
    """Q3: no window open, nothing pending on any worker, no push in flight."""
    return branch.windows_open == 0 and branch.pending_total == 0 and not branch.push_in_flight


def quiet_since(branch: BranchView) -> float:
    """When the quiet period started: the last decided write (Q2)."""
    return branch.last_write_at


def quiet_long_enough(branch: BranchView, now: float, period: float) -> bool:
    """Quiet, and for at least ``period`` seconds since the last write."""
    return is_quiet(branch) and now - quiet_since(branch) >= period
