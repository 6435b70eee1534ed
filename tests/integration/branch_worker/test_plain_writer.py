"""The benchmarks' plain writer (``bench.plain``: ``bench.mirror``, ``bench.snapshot`` and
``bench.writer`` compare the writer as built with it) takes off what issue 14 added to every
write, and nothing else, so their "as built / plain" ratios compare what they say they
compare. It is handed to the branch loop as its work tree (``PlainTree``), as the benchmarks
hand it to the branch worker: the product has no switch for it.

Each schedule runs with the plain writer and with the writer as built, and the two must
differ exactly where issue 14 acts: a hand-written file rewritten whole (P1's in-place edit
off), no bootstrap files (P4 off); and agree elsewhere (the object's content, M5).
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from bench.plain import PlainTree
from sandbox.githost.outside import git, push
from services.branch_worker.worktree import TreeFactory, WorkTree
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration

HAND_WRITTEN = """\
# owned by team blue
apiVersion: v1
kind: ConfigMap
metadata:
    name: app
    namespace: team
data:
    mode: "fast"   # fast or slow
"""


def _edit_hand_written(rig: Rig, trees: TreeFactory) -> str:
    push(str(rig.bare), rig.tmp / "person", {"apps/settings.yaml": HAND_WRITTEN}, "by hand")
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(trees=trees)
    rig.publish("app", "UPDATE", {"mode": "slow"})
    rig.drain(loop)
    loop.flush()
    return rig.show("apps/settings.yaml")


def test_the_plain_writer_rewrites_a_hand_written_file_whole(rig: Rig) -> None:
    written = _edit_hand_written(rig, PlainTree)
    assert "#" not in written  # the comments went with the whole render
    assert yaml.safe_load(written)["data"] == {"mode": "slow"}
    assert not [f for f in rig.files() if f.startswith("apps/team/")]  # found where it lives


def test_the_writer_as_built_edits_the_same_file_in_place(rig: Rig) -> None:
    written = _edit_hand_written(rig, WorkTree)
    wanted = HAND_WRITTEN.replace('"fast"', '"slow"')  # P1: one value changed, comments kept
    assert written.splitlines() == wanted.splitlines()


def _first_commit(rig: Rig, trees: TreeFactory) -> list[str]:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(trees=trees)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    return git("show", "--format=", "--name-only", "main", cwd=rig.bare).split()


def test_the_plain_writer_brings_no_bootstrap_files(rig: Rig) -> None:
    assert _first_commit(rig, PlainTree) == ["apps/team/configmaps/app.yaml"]


def test_the_writer_as_built_brings_them_with_the_folder_s_first_object(rig: Rig) -> None:
    first = _first_commit(rig, WorkTree)
    assert "apps/team/configmaps/app.yaml" in first
    assert len(first) > 1  # P4: the bootstrap files came with it


def test_a_delete_removes_the_object_s_file_with_the_plain_writer(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(trees=PlainTree)
    rig.publish("app", "CREATE")
    rig.publish("other", "CREATE")
    rig.drain(loop)
    loop.flush()
    rig.publish("app", "DELETE")
    rig.drain(loop)
    loop.flush()
    assert "apps/team/configmaps/app.yaml" not in rig.files()
    assert "apps/team/configmaps/other.yaml" in rig.files()
