"""Quietness of a branch (Q3, Q4) and what it means for a request about to be stamped (D3).

A branch is quiet only when no window is open, nothing is pending on any worker of the branch,
and no push is in flight (Q3). That test is written once, as ``busy_reasons``: ``is_quiet``,
the owner's decision to send (Q4, ``obligations.decide``), ``inspect``'s report (O3) and the
dispatcher's last check before stamping (D3, ``stale_reason``) all read it. The quiet period
a CatchUp waits after the last decided write (Q2) is decided in ``obligations.decide``, which
needs the time the wait ends, not only whether it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class BranchView:
    """What the decisions need of a branch's published state."""

    tip: str | None
    windows_open: int
    pending_total: int
    push_in_flight: bool
    last_write_at: float
    #: Events in the branch's stream not yet acknowledged: read and not pushed, or not read
    #: at all. An event the owner has not read yet is an API edit on its way to Git that no
    #: window or pending count shows (issue 11, the apply race while mirroring lags).
    unacked: int = 0


def busy_reasons(branch: BranchView) -> tuple[str, ...]:
    """Q3: why the branch is not quiet, for people to read; empty when it is quiet."""
    reasons: list[str] = []
    if branch.windows_open:
        reasons.append(f"{branch.windows_open} window(s) open")
    if branch.pending_total:
        reasons.append(f"{branch.pending_total} write(s) pending")
    if branch.push_in_flight:
        reasons.append("a push in flight")
    if branch.unacked:
        reasons.append(f"{branch.unacked} event(s) in the stream not yet pushed")
    return tuple(reasons)


def is_quiet(branch: BranchView) -> bool:
    """Q3: no window open, nothing pending on any worker, no push in flight."""
    return not busy_reasons(branch)


def stale_reason(
    commit: str, tip: str | None, branch: BranchView, behind: Sequence[str] = ()
) -> str | None:
    """D3: why a request decided at ``commit`` may not be stamped now, or None when it may.

    ``tip`` is the remote tip read just now (ls-remote), not the branch's published one: the
    request is stale when the branch moved since it was decided, or when writes that would
    move it again are on their way (Q3, Q4). ``behind`` names the watches feeding the branch
    that have not yet published what the API holds (``unmirrored``, read before ``branch``
    and ``tip``): an API edit the watcher has not seen is a write on its way too, and an apply
    now would revert it (issue 11: an edit made while the watcher was down).
    """
    late = unmirrored_reason(behind)
    if late:
        return late
    if tip != commit:
        return f"the branch tip moved to {tip or 'nothing'}"
    busy = busy_reasons(branch)
    if busy:
        return f"writes are pending on the branch: {', '.join(busy)}"
    return None


def unmirrored_reason(behind: Sequence[str]) -> str | None:
    """D3: why a request may not be stamped while the watches are ``behind`` (None: they
    are caught up); the dispatcher waits for them before it answers Stale with it."""
    if not behind:
        return None
    shown = ", ".join(behind[:3]) + (" ..." if len(behind) > 3 else "")
    return f"the watches have not mirrored the API yet: {shown}"


def unmirrored(
    listed: Iterable[Mapping[str, Any]], known: Mapping[str, tuple[str, str]]
) -> list[str]:
    """D3 (issue 11): the objects of one watch whose API state the watcher has not published.

    ``listed`` are the objects the API lists now in the watch's namespace; ``known`` is what
    the watch recorded after publishing (name -> (uid, resourceVersion)). The watch is caught
    up when every listed object is known at its uid and resourceVersion, and every known
    object is still listed; an object being deleted (``deletionTimestamp``) was published as
    a DELETE, so it counts as caught up only once the watch has let it go. Comparing objects,
    not the list's resourceVersion with the cursor, needs no ordering of resourceVersions (they
    are opaque) and no bookmark from a watch whose own objects did not change.
    """
    late: list[str] = []
    seen: set[str] = set()
    for obj in listed:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        seen.add(name)
        if meta.get("deletionTimestamp"):
            if name in known:
                late.append(name)
            continue
        if known.get(name) != (str(meta.get("uid", "")), str(meta.get("resourceVersion", ""))):
            late.append(name)
    late.extend(sorted(set(known) - seen))
    return late
