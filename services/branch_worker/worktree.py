"""The branch's work tree as its owner builds on it: the tip it built on, and each GitTarget's
folder as read from it (``Folder``), read again after every reset.

The owner decides when the tree follows the remote (a start, a tip read while idle, a replay);
this part keeps the tip and the folder scans in step with what the tree holds.
"""

from __future__ import annotations

from collections.abc import Callable

from services.branch_worker.conditions import Conditions
from services.branch_worker.folder import Folder
from services.branch_worker.postbuild import RenderReader, no_substitutions
from services.branch_worker.render_gate import RenderContext
from services.branch_worker.windows import OpenWindow
from services.branch_worker.writer import Applied, apply_event, held_as_is, only_in_history
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.model.ids import GitTargetUid
from shared.store.streams import StreamEntry

#: Builds a branch's ``WorkTree`` over its workspace (the worker's: ``WorkTree`` itself).
TreeFactory = Callable[[Workspace], "WorkTree"]


class WorkTree:
    """One owner's work tree, the tip its writes build on, and its folders' scans. Each event
    is written by ``writer.apply_event`` (``apply``); the benchmarks hand the worker a subclass
    with a plain writer of their own (``bench.plain``) through ``TreeFactory``."""

    def __init__(self, workspace: Workspace, *, renders: RenderReader = no_substitutions) -> None:
        self.ws = workspace
        #: Each GitTarget's applier render (postBuild substitutions), read once per tip.
        self._renders = renders
        self._render: dict[GitTargetUid, RenderContext] = {}
        #: The remote tip the work tree was last reset to, or the commit this owner pushed.
        self.tip: str | None = None
        self._folders: dict[GitTargetUid, Folder] = {}
        #: Per GitTarget, the digests of files the writer rendered whole (see Folder): kept
        #: when the folders are read again after a reset.
        self._rendered: dict[GitTargetUid, dict[str, str]] = {}

    def fetch(self) -> str | None:
        """The remote tip, fetched (the work tree is not moved)."""
        return self.ws.fetch()

    def reset(self, tip: str | None) -> None:
        """Build on ``tip`` from now on: the work tree is reset to it and read again."""
        self.tip = tip
        self.ws.reset(tip)
        self._folders.clear()
        self._render.clear()

    def sync(self) -> str | None:
        """Fetch the remote tip and build on it."""
        self.reset(self.fetch())
        return self.tip

    def folder(self, target: TargetConfig) -> Folder:
        """The GitTarget's folder as the work tree holds it now."""
        folder = self._folders.get(target.uid)
        if folder is None or folder.path != target.path:
            rendered = self._rendered.setdefault(target.uid, {})
            folder = self._folders[target.uid] = Folder(self.ws, target.path, rendered)
        return folder

    def discard(self, path: str, uid: GitTargetUid | None = None) -> None:
        """Put ``path`` back as HEAD holds it: ``uid``'s folder is read again (every folder's,
        when None: their scans may hold what the discard removed)."""
        self.ws.discard(path or ".")
        if uid is None:
            self._folders.clear()
        else:
            self._folders.pop(uid, None)

    def apply(self, target: TargetConfig, event: ObjectEvent) -> Applied:
        """Apply one object event to the GitTarget's folder."""
        return apply_event(self.ws, target, event, self.folder(target), self._rendering(target))

    def _rendering(self, target: TargetConfig) -> RenderContext:
        """The GitTarget's applier render (postBuild variables), read once per tip."""
        if target.uid not in self._render:
            self._render[target.uid] = self._renders(target)
        return self._render[target.uid]

    def only_in_history(self, target: TargetConfig, event: ObjectEvent) -> bool:
        """W2: whether the event's object is what Git held at an older commit, not the tip."""
        return only_in_history(self.ws, target, event, self.folder(target))

    def held_as_is(self, target: TargetConfig, event: ObjectEvent) -> bool:
        """W2: whether the work tree already holds the event's object as it came."""
        return held_as_is(event, self.folder(target), self._rendering(target))

    def apply_again(self, window: OpenWindow, conditions: Conditions) -> list[StreamEntry]:
        """Apply a window's events to the work tree again; the entries refused now, each
        recorded as a refusal (a user sees it on the GitTarget: never a write lost unseen)."""
        refused: list[StreamEntry] = []
        for entry in window.entries:
            if entry.event:
                event = entry.event
                applied = self.apply(window.target, event)
                if applied.kind == "refused":
                    conditions.applied(window.target, event, applied)
                    refused.append(entry)
        return refused
