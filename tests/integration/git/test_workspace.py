"""The git adapter against real bare repositories: exact tips, commits, CAS pushes (M7).

Facts: ../shared/facts/webhooks-git-libs.md §2.1 (ls-remote tail matching) and §2.2 (CAS push
results: a stale lease is "[rejected] (stale info)", never forced).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.githost.outside import git
from shared.git import workspace
from shared.git.errors import GitPermanent, GitTemporary, WriteNotHeld
from shared.git.remote import ls_remote, parse_advertisement
from shared.git.workspace import BULK_ADD_FILES, Committer, Workspace
from tests.configs import DEFAULT_COMMITTER

pytestmark = pytest.mark.integration


@pytest.fixture
def bare(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(path))
    return path


def _workspace(tmp_path: Path, bare: Path, name: str = "ws") -> Workspace:
    return Workspace(tmp_path / name, str(bare), "main")


def test_first_commit_on_an_empty_remote(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    assert ws.fetch() is None
    ws.reset(None)
    ws.write("apps/cm.yaml", b"a: 1\n")
    sha = ws.commit("first", DEFAULT_COMMITTER)
    assert sha is not None
    assert ws.push(expected=None).pushed
    assert ls_remote(str(bare), "main") == sha
    author = git("log", "-1", "--format=%an <%ae>|%cn", "main", cwd=bare)
    assert author == "GitOps Reverser <noreply@gitopsreverser.io>|GitOps Reverser"


def test_nothing_changed_makes_no_commit(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("a.yaml", b"x\n")
    first = ws.commit("one", DEFAULT_COMMITTER)
    ws.push(None)
    ws.reset(ws.fetch())
    ws.write("a.yaml", b"x\n")
    assert ws.commit("two", DEFAULT_COMMITTER) is None
    assert ws.head() == first


def test_stale_lease_is_rejected_and_a_replay_keeps_both_changes(
    tmp_path: Path, bare: Path
) -> None:
    ours, theirs = _workspace(tmp_path, bare, "ours"), _workspace(tmp_path, bare, "theirs")
    ours.reset(None)
    ours.write("base.yaml", b"base\n")
    base = ours.commit("base", DEFAULT_COMMITTER)
    assert ours.push(None).pushed
    theirs.reset(theirs.fetch())
    theirs.write("theirs.yaml", b"t\n")
    theirs.commit("foreign", Committer("Someone", "s@example.com"))
    assert theirs.push(base).pushed
    ours.write("ours.yaml", b"o\n")
    ours.commit("ours", DEFAULT_COMMITTER)
    rejected = ours.push(base)
    assert not rejected.pushed
    assert "stale info" in rejected.summary or "fetch first" in rejected.summary
    tip = ours.fetch()
    ours.reset(tip)
    ours.write("ours.yaml", b"o\n")
    ours.commit("ours, replayed", DEFAULT_COMMITTER)
    assert ours.push(tip).pushed
    files = git("ls-tree", "-r", "--name-only", "main", cwd=bare).split()
    assert files == ["base.yaml", "ours.yaml", "theirs.yaml"]


def test_ls_remote_matches_the_exact_ref_only() -> None:
    output = "aaa\trefs/remotes/origin/refs/heads/main\nbbb\trefs/heads/main\n"
    assert parse_advertisement(output)["refs/heads/main"] == "bbb"


def test_ls_remote_of_a_missing_branch_is_none(tmp_path: Path, bare: Path) -> None:
    assert ls_remote(str(bare), "nope") is None


def test_ls_remote_of_a_missing_repository_is_permanent(tmp_path: Path) -> None:
    with pytest.raises(GitPermanent):
        ls_remote(str(tmp_path / "absent.git"), "main")


def test_paths_cannot_leave_the_work_tree(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    with pytest.raises(GitPermanent):
        ws.write("../escape.yaml", b"x")
    with pytest.raises(GitPermanent):
        ws.write(".git/config", b"x")


def test_a_commit_git_refuses_is_an_error_not_nothing_to_commit(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("a.yaml", b"x\n")
    with pytest.raises(GitTemporary, match="commit failed"):
        ws.commit("no one", Committer("", ""))  # git: empty ident name not allowed
    assert ws.commit("someone", DEFAULT_COMMITTER) is not None  # the change is still staged


def test_head_is_read_from_loose_and_packed_refs(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("a.yaml", b"x\n")
    first = ws.commit("one", DEFAULT_COMMITTER)
    assert first == ws.head() == git("rev-parse", "HEAD", cwd=ws.directory)
    git("pack-refs", "--all", cwd=ws.directory)
    assert ws.head() == first
    ws.write("a.yaml", b"y\n")
    second = ws.commit("two", DEFAULT_COMMITTER)
    assert second != first
    assert second == ws.head() == git("rev-parse", "HEAD", cwd=ws.directory)


def test_symbolic_links_out_of_the_work_tree_are_refused(tmp_path: Path, bare: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    (ws.directory / "linked").symlink_to(outside, target_is_directory=True)
    (ws.directory / "file.yaml").symlink_to(outside / "target.yaml")
    for path in ("linked/cm.yaml", "file.yaml"):
        with pytest.raises(GitPermanent):
            ws.write(path, b"x\n")
        with pytest.raises(GitPermanent):
            ws.write_if_changed(path, b"x\n")
    assert list(outside.iterdir()) == []


def test_write_if_changed_writes_only_other_bytes(tmp_path: Path, bare: Path) -> None:
    """The writer's one call per file: a new file (and its folders) is written, the same bytes
    again are not (False, nothing to commit), other bytes are; each as ``write`` does."""
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    assert ws.write_if_changed("apps/team/cm.yaml", b"a: 1\n")
    assert (ws.directory / "apps/team/cm.yaml").read_bytes() == b"a: 1\n"
    first = ws.commit("one", DEFAULT_COMMITTER)
    assert first is not None
    assert not ws.write_if_changed("apps/team/cm.yaml", b"a: 1\n")
    assert ws.commit("nothing", DEFAULT_COMMITTER) is None
    assert ws.write_if_changed("apps/team/cm.yaml", b"a: 2\n")
    assert ws.commit("two", DEFAULT_COMMITTER) not in (None, first)
    with pytest.raises(GitPermanent):
        ws.write_if_changed("../escape.yaml", b"x")


def test_a_folder_replaced_by_a_link_in_a_commit_is_refused_after_the_reset(
    tmp_path: Path, bare: Path
) -> None:
    """Folders are checked once per work-tree state: a reset to a commit that turned a folder
    into a symbolic link is a new state."""
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("apps/a.yaml", b"a\n")  # "apps" is checked and remembered as a real folder
    ws.commit("one", DEFAULT_COMMITTER)
    assert ws.push(None).pushed
    theirs = tmp_path / "theirs"
    git("clone", "-q", str(bare), str(theirs))
    git("rm", "-q", "-r", "apps", cwd=theirs)
    outside = tmp_path / "outside"
    outside.mkdir()
    (theirs / "apps").symlink_to(outside, target_is_directory=True)
    git("add", "apps", cwd=theirs)
    git("commit", "-qm", "apps is a link now", cwd=theirs)
    git("push", "-q", "origin", "HEAD:main", cwd=theirs)
    ws.reset(ws.fetch())
    assert (ws.directory / "apps").is_symlink()
    with pytest.raises(GitPermanent):
        ws.write("apps/b.yaml", b"b\n")
    with pytest.raises(GitPermanent):
        ws.read("apps/a.yaml")
    assert list(outside.iterdir()) == []


def _objects(directory: Path) -> dict[str, int]:
    out = git("count-objects", "-v", cwd=directory)
    return {k: int(v) for k, _, v in (line.partition(": ") for line in out.splitlines())}


def test_a_large_commit_writes_its_blobs_into_one_pack(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    files = {f"apps/cm-{i:04d}.yaml": f"index: '{i}'\n".encode() for i in range(BULK_ADD_FILES)}
    for path, data in files.items():
        ws.write(path, data)
    sha = ws.commit("many", DEFAULT_COMMITTER)
    assert sha is not None
    counts = _objects(ws.directory)
    assert counts["packs"] == 1 and counts["in-pack"] == BULK_ADD_FILES
    assert counts["count"] == 3  # loose: the two trees and the commit
    assert ws.push(None).pushed
    listed = git("ls-tree", "-r", "--name-only", "main", cwd=bare).splitlines()
    assert listed == sorted(files)
    assert git("show", "main:apps/cm-0007.yaml", cwd=bare) == "index: '7'"
    git("fsck", "--strict", cwd=ws.directory)


def test_a_small_commit_writes_loose_objects(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("apps/a.yaml", b"a\n")
    assert ws.commit("one", DEFAULT_COMMITTER) is not None
    counts = _objects(ws.directory)
    assert counts["packs"] == 0 and counts["count"] == 4  # blob, two trees, commit


def test_a_write_the_commit_does_not_hold_is_not_taken_as_done(tmp_path: Path, bare: Path) -> None:
    """M8 (the reliability probe's symlinked folder): a write through a link inside the tree
    lands outside the committed folder; before, the commit was taken as holding it. Now the
    commit's tree is checked (one ls-tree) and WriteNotHeld is raised: nothing is acknowledged."""
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("elsewhere/.gitkeep", b"")
    ws.commit("base", DEFAULT_COMMITTER)
    (tmp_path / "ws" / "apps").mkdir()
    (tmp_path / "ws" / "apps" / "team").symlink_to("../elsewhere")
    ws.write("apps/team/cm.yaml", b"a: 1\n")  # lands in elsewhere/cm.yaml
    with pytest.raises(WriteNotHeld, match=r"apps/team/cm\.yaml"):
        ws.commit("cm", DEFAULT_COMMITTER, paths=("apps",))


def test_writes_and_deletes_the_commit_holds_pass_the_check(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("apps/a.yaml", b"a\n")
    ws.write("apps/b.yaml", b"b\n")
    assert ws.commit("two", DEFAULT_COMMITTER, paths=("apps",)) is not None
    ws.delete("apps/a.yaml")
    ws.write("apps/b.yaml", b"b\n")  # the same bytes: nothing to commit, still held
    assert ws.commit("one gone", DEFAULT_COMMITTER, paths=("apps",)) is not None
    assert git("ls-tree", "-r", "--name-only", "HEAD", cwd=tmp_path / "ws").split() == [
        "apps/b.yaml"
    ]


def test_a_delete_the_commit_does_not_hold_is_caught(tmp_path: Path, bare: Path) -> None:
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("apps/a.yaml", b"a\n")
    ws.commit("one", DEFAULT_COMMITTER)
    ws.delete("apps/a.yaml")
    (tmp_path / "ws" / "apps" / "a.yaml").write_bytes(b"back\n")  # someone puts it back
    with pytest.raises(WriteNotHeld, match="still there"):
        ws.commit("gone?", DEFAULT_COMMITTER, paths=("apps",))


def test_the_root_folder_is_the_work_tree(tmp_path: Path, bare: Path) -> None:
    """C7: '.' names the root; scanning it lists the files, and no link leads elsewhere."""
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    ws.write("team/cm.yaml", b"a: 1\n")
    assert ws.files(".") == ["team/cm.yaml"]
    assert not ws.leads_elsewhere(".")
    assert ws.commit("root", DEFAULT_COMMITTER, paths=(".",)) is not None


def test_a_reset_git_cannot_make_is_temporary_not_a_raw_git_error(
    tmp_path: Path, bare: Path
) -> None:
    """T4: a git failure in a reset (here a tip the clone does not hold) gives the branch back
    as ``GitTemporary``; a raw GitCommandError escaped the pass and stopped the process."""
    ws = _workspace(tmp_path, bare)
    ws.fetch()
    with pytest.raises(GitTemporary, match="reset to 0123456789"):
        ws.reset("0123456789abcdef0123456789abcdef01234567")


def test_versions_lists_what_a_file_held_at_its_last_commits(tmp_path: Path, bare: Path) -> None:
    """W1 (historical) reads a file's history: the contents after each commit that changed
    it, newest first, as many as asked; a delete gives nothing, another file's commits count
    for nothing, uncommitted writes are not history; no HEAD, no history."""
    ws = _workspace(tmp_path, bare)
    ws.reset(None)
    assert ws.versions("apps/cm.yaml", 5) == []
    for step, files in enumerate(
        [{"apps/cm.yaml": b"v: 1\n"}, {"other.yaml": b"o\n"}, {"apps/cm.yaml": b"v: 2\n"}]
    ):
        for path, data in files.items():
            ws.write(path, data)
        assert ws.commit(f"step {step}", DEFAULT_COMMITTER) is not None
    ws.delete("apps/cm.yaml")
    ws.commit("delete", DEFAULT_COMMITTER)
    ws.write("apps/cm.yaml", b"v: 3\n")
    ws.commit("again", DEFAULT_COMMITTER)
    ws.write("apps/cm.yaml", b"v: uncommitted\n")
    assert ws.versions("apps/cm.yaml", 10) == [b"v: 3\n", b"v: 2\n", b"v: 1\n"]
    assert ws.versions("apps/cm.yaml", 2) == [b"v: 3\n"]  # the delete was one of the two
    assert ws.versions("missing.yaml", 10) == []
    assert ws.versions("apps/cm.yaml", 10, within=2) == [b"v: 3\n"]  # "again" and "delete"
    assert ws.versions("apps/cm.yaml", 10, within=3) == [b"v: 3\n", b"v: 2\n"]
    assert ws.versions("apps/cm.yaml", 10, within=50) == [b"v: 3\n", b"v: 2\n", b"v: 1\n"]


def test_auto_maintenance_runs_once_every_so_many_commits_not_after_each(
    tmp_path: Path, bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git commit`` starts ``git maintenance run --auto`` after every commit, a process per
    edit; the work tree turns that off and runs the same check every ``MAINTAIN_EVERY``
    commits itself (git's own trace counts the runs)."""
    monkeypatch.setattr(workspace, "MAINTAIN_EVERY", 3)
    trace = tmp_path / "trace"
    ws = Workspace(tmp_path / "ws", str(bare), "main", env={"GIT_TRACE": str(trace)})
    ws.reset(None)
    for i in range(7):
        ws.write("a.yaml", f"n: {i}\n".encode())
        assert ws.commit(f"edit {i}", DEFAULT_COMMITTER) is not None
    runs = [
        line
        for line in trace.read_text().splitlines()
        if "built-in: git maintenance run --auto" in line
    ]
    assert len(runs) == 2  # after the 3rd and the 6th commit
    assert git("config", "maintenance.auto", cwd=tmp_path / "ws") == "false"
