"""N12: a branch worker's start removes the work folders of this host's earlier workers whose
process is gone, and no folder that may be in use."""

from __future__ import annotations

import os
from pathlib import Path

from services.branch_worker.workdirs import remove_stale, stale_folders


def _folders(root: Path, *names: str) -> None:
    for name in names:
        (root / name / "branch").mkdir(parents=True)


def test_only_folders_of_gone_processes_of_this_host_are_stale(tmp_path: Path) -> None:
    _folders(tmp_path, "h-100", "h-101", "h-102", "h-own", "other-100", "h-abc", "chosen-id")
    (tmp_path / "h-103").write_text("a file, not a folder")
    running = {101}
    stale = stale_folders(tmp_path, "h", "h-102", running.__contains__)
    assert stale == [tmp_path / "h-100"]  # 101 runs, 102 is this worker, the rest not ours


def test_a_link_is_never_followed_or_removed(tmp_path: Path) -> None:
    _folders(tmp_path, "elsewhere")
    (tmp_path / "h-100").symlink_to(tmp_path / "elsewhere")
    assert stale_folders(tmp_path, "h", "h-1", lambda pid: False) == []


def test_remove_stale_removes_them_and_keeps_the_rest(tmp_path: Path) -> None:
    """Failed before (no clean-up at all): six starts left six full sets of clones."""
    own = f"h-{os.getpid()}"
    _folders(tmp_path, "h-999999999", own)
    removed = remove_stale(tmp_path, "h", own)
    assert removed == [tmp_path / "h-999999999"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [own]


def test_a_missing_work_dir_is_nothing_to_do(tmp_path: Path) -> None:
    assert remove_stale(tmp_path / "none", "h", "h-1") == []
