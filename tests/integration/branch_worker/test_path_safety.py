"""A write lands where its GitTarget's folder is, or is refused in status; never elsewhere, never
a stalled branch (M4, M8, M10, T4): the reliability probe's symlinked-folder, C6, C7 and C2
findings.

Failed before the fix: a symlinked folder from a foreign commit swallowed the write and the
event was acknowledged with no commit; a link to an absolute path raised GitPermanent on
every wake (C6); ``spec.path: "."`` refused every write (C7); a 253-character name raised
ENAMETOOLONG on every wake (C2).
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from sandbox.githost.outside import git
from services.branch_worker.branch import BranchLoop
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _foreign_commit(rig: Rig, links: dict[str, str], files: tuple[str, ...] = ()) -> None:
    """Someone else pushes symbolic links (path -> target) and empty files to the branch."""
    other = rig.tmp / "other"
    git("clone", "-q", str(rig.bare), str(other))
    for path in files:
        (other / path).parent.mkdir(parents=True, exist_ok=True)
        (other / path).write_text("")
    for path, target in links.items():
        (other / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, other / path)
    git("add", "-A", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "links", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)


def _pending(rig: Rig) -> int:
    return rig.events.pending_count(rig.bk)


def _write(rig: Rig, name: str = "via-symlink", loop: BranchLoop | None = None) -> None:
    loop = loop or rig.loop()
    rig.publish(name, "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()


def test_a_symlinked_namespace_folder_refuses_the_write_in_status(rig: Rig) -> None:
    """The symlinked folder, apps/team -> ../elsewhere. Before: written to elsewhere/,
    acknowledged, no commit."""
    _foreign_commit(rig, {"apps/team": "../elsewhere"}, files=("elsewhere/.gitkeep",))
    before = rig.head()
    _write(rig)
    assert rig.head() == before  # nothing committed, nothing pushed
    assert not any(f.startswith("elsewhere/team") for f in rig.files())
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None
    assert refusal["reason"] == "SymbolicLink"
    assert "apps/team is a symbolic link" in refusal["message"]


def test_a_folder_that_is_itself_a_link_is_refused(rig: Rig) -> None:
    """spec.path's own folder leads elsewhere in the repository."""
    _foreign_commit(rig, {"apps": "elsewhere"}, files=("elsewhere/.gitkeep",))
    _write(rig)
    assert not any(f.startswith("elsewhere/team") for f in rig.files())
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "PathOutsideTarget"


def test_a_link_to_an_absolute_path_is_refused_not_retried(rig: Rig) -> None:
    """C6: before, every wake raised GitPermanent ('leaves the work tree'): a stall, no status."""
    _foreign_commit(rig, {"apps/team": "/tmp"})
    _write(rig, "via-abs-symlink")
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "SymbolicLink"
    assert _pending(rig) == 0  # refused and acknowledged (M10), not retried every wake


def test_the_refusal_lifts_when_the_link_goes(rig: Rig) -> None:
    _foreign_commit(rig, {"apps/team": "/tmp"})
    loop = rig.loop()
    _write(rig, "first", loop)
    assert rig.configs.refusal(rig.target.uid) is not None
    other = rig.tmp / "other"
    git("rm", "-q", "apps/team", cwd=other)
    git("-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "unlink", cwd=other)
    git("push", "-q", "origin", "HEAD:main", cwd=other)
    loop.check_tip()  # the foreign commit: the work tree follows it, the folder is read again
    _write(rig, "second", loop)
    assert "apps/team/configmaps/second.yaml" in rig.files()
    assert rig.configs.refusal(rig.target.uid) is None


def test_dot_writes_at_the_repository_root(rig: Rig) -> None:
    """C7: spec.path '.' is the root (docs/crds.md)."""
    rig.target = replace(rig.target, path=".")
    rig.configs.publish_target(rig.target)
    _write(rig, "at-root")
    assert "team/configmaps/at-root.yaml" in rig.files()
    assert rig.configs.refusal(rig.target.uid) is None


def test_a_name_of_253_characters_is_written_and_found_again(rig: Rig) -> None:
    """C2: before, ENAMETOOLONG from Workspace.read on every wake, and later edits never came."""
    name = "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61
    loop = rig.loop()
    rig.publish(name, "CREATE", data={"v": "1"})
    rig.publish("normal-after", "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    long_files = [f for f in rig.files() if f.startswith("apps/team/configmaps/aaa")]
    assert len(long_files) == 1
    assert "apps/team/configmaps/normal-after.yaml" in rig.files()
    rig.publish(name, "UPDATE", data={"v": "2"})
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert "v: '2'" in rig.show(long_files[0])  # found by identity, edited in place
    rig.publish(name, "DELETE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()
    assert long_files[0] not in rig.files()


def test_a_folder_name_the_file_system_refuses_is_a_refusal_not_a_stall(rig: Rig) -> None:
    """T4: spec.path may hold a 300-byte segment (the CRD allows 1024 characters); the file
    system refuses it (ENAMETOOLONG): the GitTarget is refused in status, the branch goes on."""
    rig.target = replace(rig.target, path="apps/" + "x" * 300)
    rig.configs.publish_target(rig.target)
    _write(rig, "too-deep")
    refusal = rig.configs.refusal(rig.target.uid)
    assert refusal is not None and refusal["reason"] == "PathNotWritable"
    assert "File name too long" in refusal["message"]
    assert _pending(rig) == 0
