"""An empty commit (P11: ``onRefusal: PushEmptyCommit``) against a real bare repository: a new
commit on the tip, by the committer, that changes no file, pushed compare-and-swap."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.githost.outside import git
from shared.git.empty_commit import commit_empty
from shared.git.remote import ls_remote
from shared.git.workspace import Workspace
from tests.configs import DEFAULT_COMMITTER

pytestmark = pytest.mark.integration


def test_an_empty_commit_moves_the_branch_and_changes_no_file(tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    ws = Workspace(tmp_path / "ws", str(bare), "main")
    ws.reset(None)
    ws.write("apps/cm.yaml", b"a: 1\n")
    base = ws.commit("first", DEFAULT_COMMITTER)
    assert base is not None and ws.push(None).pushed

    sha = commit_empty(ws, "Reapply refused edits", DEFAULT_COMMITTER)
    assert sha != base and ws.head() == sha
    assert ws.push(base).pushed
    assert ls_remote(str(bare), "main") == sha
    assert git("rev-parse", f"{sha}^", cwd=bare) == base
    assert git("diff-tree", "--no-commit-id", "--name-only", "-r", sha, cwd=bare) == ""
    assert git("log", "-1", "--format=%an <%ae>|%s", sha, cwd=bare) == (
        "GitOps Reverser <noreply@gitopsreverser.io>|Reapply refused edits"
    )
