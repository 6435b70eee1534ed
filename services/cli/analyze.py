"""``gitops-reverser analyze DIR``: what the writer would do with a folder, without a cluster.

The folder is copied (symbolic links as links) into a scratch work tree and read by the
branch worker's own ``Folder``, the code that decides on a live branch: the objects it would
adopt (found by identity wherever their file is, M4; rendered through the kustomize subset
when the folder holds a kustomization, P2), the files ``.gittargetignore`` hides (P4), and
every file that would make it refuse the folder, with the reason its GitTarget's condition
would show (M10). The user's folder is never written to.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from services.branch_worker.folder import Folder
from services.cli.context import Context
from services.cli.errors import EXIT_CHECK_FAILED, EXIT_OK, NotFoundError
from services.cli.output import emit
from shared.git.workspace import Workspace

#: Where the copy goes inside the scratch work tree (stripped again from every path shown).
FOLDER = "folder"
#: A remote that is never called: the scratch work tree is only read.
NO_REMOTE = "file:///dev/null"


def _shown(path: str) -> str:
    return path.removeprefix(FOLDER + "/")


def analysis(directory: Path) -> dict[str, Any]:
    """The writer's view of ``directory`` as a record."""
    if not directory.is_dir():
        raise NotFoundError(f"{directory} is not a folder")
    with tempfile.TemporaryDirectory(prefix="gitops-reverser-analyze-") as scratch:
        work = Path(scratch) / "work"
        ignore = shutil.ignore_patterns(".git")
        shutil.copytree(directory, work / FOLDER, symlinks=True, ignore=ignore)
        folder = Folder(Workspace(work, NO_REMOTE, "main"), FOLDER)
        verdict = folder.verdict
        objects = []
        for group, kind, namespace, name in sorted(folder.identities()):
            located = folder.find((group, kind, namespace, name))
            objects.append(
                {"group": group, "kind": kind, "namespace": namespace, "name": name}
                | {"file": _shown(located.path) if located else "(kustomize render)"}
            )
        refused = [
            {"file": _shown(file), "reason": reason}
            for file, reason in sorted(folder.refused_files().items())
        ]
        ignored = [_shown(f) for f in folder.files if folder.ignore.ignores(f)]
    return {
        "folder": str(directory),
        "accepted": verdict.accepted,
        "refusal": None
        if verdict.accepted
        else {
            "file": _shown(verdict.offending),
            "reason": verdict.reason,
            "detail": verdict.detail.replace(f"{FOLDER}/", "").replace(repr(FOLDER), "the folder"),
        },
        "kustomize": folder.tree is not None,
        "objects": objects,
        "refusedFiles": refused,
        "ignoredFiles": ignored,
    }


def text_of(record: dict[str, Any]) -> str:
    """The record as a person reads it."""
    lines = []
    if record["accepted"]:
        lines.append(f"{record['folder']}: the writer would adopt this folder")
    else:
        r = record["refusal"]
        why = f": {r['detail']}" if r["detail"] else ""
        lines.append(
            f"{record['folder']}: the writer would REFUSE it ({r['reason']} at {r['file']}{why})"
        )
    lines.append(f"objects it would adopt ({len(record['objects'])}):")
    lines += [
        f"  {o['kind']} {'/'.join(filter(None, (o['namespace'], o['name'])))} in {o['file']}"
        for o in record["objects"]
    ]
    for f in record["refusedFiles"]:
        lines.append(f"refused file: {f['file']} ({f['reason']})")
    for f in record["ignoredFiles"]:
        lines.append(f"ignored (.gittargetignore): {f}")
    return "\n".join(lines)


def analyze(ctx: Context, directory: str) -> int:
    """Print the analysis; ``EXIT_CHECK_FAILED`` when the writer would refuse the folder."""
    record = analysis(Path(directory))
    emit(record, ctx.output, text=text_of(record))
    return EXIT_OK if record["accepted"] else EXIT_CHECK_FAILED
