"""Quietness of a branch (Q3, Q4) and what it means for a request about to be stamped (D3).

A branch is quiet only when no window is open, nothing is pending on any worker of the branch,
and no push is in flight (Q3). That test is written once, as ``busy_reasons``: ``is_quiet``,
the owner's decision to send (Q4, ``obligations.decide``), ``inspect``'s report (O3) and the
dispatcher's last check before stamping (D3, ``stale_reason``) all read it. The quiet period
a CatchUp waits after the last decided write (Q2) is decided in ``obligations.decide``, which
needs the time the wait ends, not only whether it has.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BranchView:
    """What the decisions need of a branch's published state."""

    tip: str | None
    windows_open: int
    pending_total: int
    push_in_flight: bool
    last_write_at: float


def busy_reasons(branch: BranchView) -> tuple[str, ...]:
    """Q3: why the branch is not quiet, for people to read; empty when it is quiet."""
    reasons: list[str] = []
    if branch.windows_open:
        reasons.append(f"{branch.windows_open} window(s) open")
    if branch.pending_total:
        reasons.append(f"{branch.pending_total} write(s) pending")
    if branch.push_in_flight:
        reasons.append("a push in flight")
    return tuple(reasons)


def is_quiet(branch: BranchView) -> bool:
    """Q3: no window open, nothing pending on any worker, no push in flight."""
    return not busy_reasons(branch)


def stale_reason(commit: str, tip: str | None, branch: BranchView) -> str | None:
    """D3: why a request decided at ``commit`` may not be stamped now, or None when it may.

    ``tip`` is the remote tip read just now (ls-remote), not the branch's published one: the
    request is stale when the branch moved since it was decided, or when writes that would
    move it again are on their way (Q3, Q4).
    """
    if tip != commit:
        return f"the branch tip moved to {tip or 'nothing'}"
    busy = busy_reasons(branch)
    if busy:
        return f"writes are pending on the branch: {', '.join(busy)}"
    return None
