"""A branch's windows (Q2, P5, P6): the writes of one GitTarget, by one author, on their way to
a commit (``OpenWindow``), and a commit on its way to the remote (``ClosedWindow``).

Plain records and the folder arithmetic the holds need; the owner (``branch.py``) decides
when a window opens, closes, is held or is made again.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from shared.decide.window import Window
from shared.model.attribution import Author
from shared.model.commit_requests import CommitRequestItem
from shared.model.config import TargetConfig
from shared.store.streams import StreamEntry


@dataclass(slots=True)
class OpenWindow:
    """Writes of one GitTarget not yet committed, all by one author."""

    target: TargetConfig
    window: Window
    entries: list[StreamEntry] = field(default_factory=list)
    #: Who made these edits (attribution); None when attribution is off for the GitTarget
    #: (its commits are authored by the committer). A write by another author closes the
    #: window first, so one window is one author's commit.
    author: Author | None = None
    #: CommitRequests bound to the window (P6) and the close they ask for (None: none).
    requests: list[CommitRequestItem] = field(default_factory=list)
    deadline: float | None = None


@dataclass(slots=True)
class ClosedWindow:
    """A committed window whose commit is not pushed yet."""

    target: TargetConfig
    message: str
    entries: list[StreamEntry]
    author: Author | None = None  # kept for a replay: the commit is made again by them
    requests: list[CommitRequestItem] = field(default_factory=list)
    #: The window's commit (made again by a replay, M7), None when it changed nothing.
    sha: str | None = None


def join_held(held: list[OpenWindow], window: OpenWindow, span: Window | None = None) -> None:
    """Add ``window`` to a GitTarget's held windows (a copy; ``span``: the merged window's
    timing, kept when omitted): merged into the last one when it is the same author's, else
    kept after it, so a held commit never holds another author's edits (P5). Every held
    window takes the newest settings of the GitTarget."""
    for earlier in held:
        earlier.target = window.target
    if held and held[-1].author == window.author:
        last = held[-1]
        last.entries.extend(window.entries)
        last.requests.extend(window.requests)
        if span is not None:
            last.window = span
        return
    held.append(
        OpenWindow(
            window.target,
            window.window,
            list(window.entries),
            window.author,
            requests=list(window.requests),
        )
    )


def overlap(a: str, b: str) -> bool:
    """Whether two GitTargets' folders are one, or one holds the other."""
    x, y = (posixpath.normpath(p or ".").strip("/") for p in (a, b))
    x, y = ("" if x == "." else x), ("" if y == "." else y)
    return not x or not y or x == y or x.startswith(y + "/") or y.startswith(x + "/")


def depth(path: str) -> int:
    """How many folders deep a GitTarget's folder is (the root: 0)."""
    norm = posixpath.normpath(path or ".").strip("/")
    return 0 if norm == "." else norm.count("/") + 1
