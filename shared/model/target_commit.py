"""``GitTarget.spec.commit.window`` and ``spec.commit.message`` (issue 27.7).

The Go operator moved the commit window and the message templates from the GitProvider to the
GitTarget, so GitTargets that share a repository can differ. Here the GitTarget's values win
and its GitProvider's are the defaults: a GitTarget without ``window`` keeps the GitProvider's
``spec.push.commitWindow``, one without ``liveTemplate`` its ``eventTemplate`` and
``groupTemplate``, one without ``reconcileTemplate`` the wording those give a listing's
deletes (D2). Templates are Go ``text/template`` on ``shared.gotemplate``, checked with its
bounds (``shared.model.templates``: ``LIVE`` and ``RECONCILE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from shared.model.duration import DurationError, parse_duration

#: Longest window a GitTarget may ask for (the Go operator's bound); the process's
#: ``GITOPS_REVERSER_MAX_WINDOW`` still caps how long a busy window stays open.
MAX_WINDOW_S = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class CommitSettings:
    """A GitTarget's window (None: its GitProvider's) and templates ("": its GitProvider's)."""

    window_s: float | None = None
    live_template: str = ""
    reconcile_template: str = ""
    problem: str = ""  # why the window cannot be used ("": it can; templates are checked apart)


def _map(value: Any) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def parse_commit_settings(spec: Mapping[str, Any]) -> CommitSettings:
    """``spec.commit.window`` and ``spec.commit.message`` of a GitTarget's spec."""
    commit = _map(spec.get("commit"))
    message = _map(commit.get("message"))
    live = str(message.get("liveTemplate") or "")
    reconcile = str(message.get("reconcileTemplate") or "")
    raw = commit.get("window")
    if raw is None or raw == "":
        return CommitSettings(None, live, reconcile)
    try:
        seconds = parse_duration(str(raw)).total_seconds()
    except DurationError as err:
        return CommitSettings(None, live, reconcile, f"spec.commit.window {raw!r}: {err}")
    if seconds > MAX_WINDOW_S:
        problem = f"spec.commit.window {raw!r} is longer than 24h"
        return CommitSettings(None, live, reconcile, problem)
    return CommitSettings(seconds, live, reconcile)
