"""A branch whose remote has no commits at all: a first push the remote refuses, then a replay
or a restart over the same work tree, starts the branch again from nothing.

Before the fix, the second ``reset(None)`` ran ``git checkout --orphan gr-main`` while the
refused commit still held ``gr-main``, and git answered "a branch named 'gr-main' already
exists": the branch could never push again.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sandbox.githost.outside import git
from shared.git.workspace import Workspace
from tests.configs import DEFAULT_COMMITTER

pytestmark = pytest.mark.integration


def _refusing_empty_remote(tmp_path: Path) -> Path:
    bare = tmp_path / "empty.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    return bare


def _refused_first_commit(ws: Workspace, path: str) -> None:
    assert ws.fetch() is None, "the remote has no commits"
    ws.reset(None)
    ws.write(path, f"{path}\n".encode())
    assert ws.commit(f"write {path}", DEFAULT_COMMITTER) is not None
    result = ws.push(expected=None)
    assert not result.pushed
    assert "declined" in result.summary, result.summary


def test_a_refused_first_push_is_replayed_and_lands_once_the_remote_accepts(
    tmp_path: Path,
) -> None:
    bare = _refusing_empty_remote(tmp_path)
    ws = Workspace(tmp_path / "ws", str(bare), "main")
    _refused_first_commit(ws, "apps/a.yaml")
    _refused_first_commit(ws, "apps/b.yaml")  # the replay: from nothing again
    assert ws.files("apps") == ["apps/b.yaml"], "the refused commit is not built on"
    (bare / "hooks" / "pre-receive").unlink()
    assert ws.push(expected=None).pushed
    assert git("rev-list", "--parents", "main", cwd=bare).split() == [ws.head()], (
        "one root commit: the refused one is not its parent"
    )
    assert git("ls-tree", "-r", "--name-only", "main", cwd=bare).split() == ["apps/b.yaml"]


def test_a_restart_over_the_work_tree_of_a_refused_first_push_starts_from_nothing(
    tmp_path: Path,
) -> None:
    bare = _refusing_empty_remote(tmp_path)
    _refused_first_commit(Workspace(tmp_path / "ws", str(bare), "main"), "apps/a.yaml")
    again = Workspace(tmp_path / "ws", str(bare), "main")  # a new process, the folder kept
    _refused_first_commit(again, "apps/b.yaml")
    assert again.files("apps") == ["apps/b.yaml"]
    (bare / "hooks" / "pre-receive").unlink()
    assert again.push(expected=None).pushed
    assert git("rev-list", "--parents", "main", cwd=bare).split() == [again.head()]
