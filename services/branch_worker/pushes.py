"""What a push carried for each GitTarget (issue 26): the commit and how many objects it
wrote, recorded for the watcher's Ready message, its Events and the GitTarget's metrics
(``shared.store.target_health``)."""

from __future__ import annotations

from collections.abc import Sequence

from services.branch_worker.windows import ClosedWindow
from services.branch_worker.writer import key_of
from shared.model.ids import GitTargetUid
from shared.store.target_health import Push


def pushes_of(closed: Sequence[ClosedWindow], at: float) -> dict[GitTargetUid, Push]:
    """Each GitTarget's newest commit among the pushed windows and the objects they wrote
    (distinct objects; a window that changed nothing made no commit and counts for nothing)."""
    shas: dict[GitTargetUid, str] = {}
    objects: dict[GitTargetUid, set[tuple[str, str, str, str]]] = {}
    for window in closed:
        if window.sha is None:
            continue
        uid = window.target.uid
        shas[uid] = window.sha
        written = objects.setdefault(uid, set())
        written.update(key_of(e.event) for e in window.entries if e.event is not None)
    return {uid: Push(sha, len(objects[uid]), at) for uid, sha in shas.items()}
