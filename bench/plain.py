"""The plain writer the benchmarks compare the branch worker's writer with: a stand-in, built
here, for what the writer was before issue 14 (the product has no switch for it).

Each event's object is rendered whole (``shared.model.manifest.render``) into the file that
holds it (found by identity in the folder's index, M4) or, for a new object, its canonical
path; a delete drops its document (the file, when it was the last). What issue 14 added to
every write is left out: no in-place edit of a file a person wrote (P1: its comments go), no
digests of what was rendered, no ``.gittargetignore`` check of a new path and no bootstrap
files (P4). The folder is still scanned and indexed as the product does (``Folder``), so the
ratio "as built / plain" prices those additions and nothing else. Benchmarks only: it writes
no Secret and no kustomize folder (the benchmarks' folders hold neither).

``PlainTree`` is the branch worker's work tree with this writer (``BranchWorker(trees=...)``);
``python -m bench.plain`` runs a branch-worker process with it (``bench.snapshot``).
"""

from __future__ import annotations

import sys
from typing import Any

from services.branch_worker.__main__ import main
from services.branch_worker.folder import Folder
from services.branch_worker.worktree import WorkTree
from services.branch_worker.writer import NO_WRITE, Applied, key_of
from shared.decide.placement import PlacementRefused, canonical_path
from shared.git.workspace import Workspace
from shared.model.config import TargetConfig
from shared.model.events import ObjectEvent
from shared.model.manifest import render


def apply_plain(
    workspace: Workspace, target: TargetConfig, event: ObjectEvent, folder: Folder
) -> Applied:
    """Apply ``event`` as the plain writer does (see the module)."""
    if event.sensitive or folder.tree is not None:
        return Applied("refused", reason="PlainWriter", message="not written by the plain writer")
    verdict = folder.verdict
    if not verdict.accepted:
        return Applied("refused", reason=verdict.reason, message=verdict.detail)
    located = folder.find(key_of(event))
    body = None if event.operation == "DELETE" else event.body
    if body is None:
        if located is None or target.prune == "Never":
            return NO_WRITE
        docs = [d for i, d in enumerate(located.documents) if i != located.index]
        path = located.path
    elif located is None:
        try:
            path = canonical_path(target.path, event.object_id)
        except PlacementRefused as err:
            return Applied("refused", reason="PathOutsideTarget", message=str(err))
        docs = [body]
    else:
        if located.documents[located.index] == body:
            return NO_WRITE
        docs = list(located.documents)
        docs[located.index] = body
        path = located.path
    return _write(workspace, folder, path, docs)


def _write(workspace: Workspace, folder: Folder, path: str, docs: list[dict[str, Any]]) -> Applied:
    if not docs:
        workspace.delete(path)
    else:
        data = b"---\n".join(render(doc) for doc in docs)
        if workspace.read(path) == data:
            return NO_WRITE
        workspace.write(path, data)
    folder.record(path, docs)  # indexed as written; no digest: nothing is ever edited in place
    return Applied("write", path=path, documents=tuple(docs))


class PlainTree(WorkTree):
    """The branch worker's work tree, writing with the plain writer."""

    def apply(self, target: TargetConfig, event: ObjectEvent) -> Applied:
        return apply_plain(self.ws, target, event, self.folder(target))


if __name__ == "__main__":  # a branch-worker process with the plain writer
    sys.exit(main(trees=PlainTree))
