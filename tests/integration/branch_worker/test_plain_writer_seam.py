"""The benchmark seam ``GR_TEST_SEAM_PLAIN_WRITER`` (``bench.mirror``, ``bench.snapshot``)
really takes off what issue 14 added to every write, so the benchmarks' "as built vs plain"
ratio compares what it says it compares: a plain loop rewrites a hand-written file whole
(in-place editing off) and brings no bootstrap files (bootstrap off); the seam is on only
when set to ``1``."""

from __future__ import annotations

import dataclasses

import pytest

from sandbox.githost.outside import git, push
from shared.settings import PLAIN_WRITER_TEST_SEAM, plain_writer_switched_on
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


def test_the_plain_writer_rewrites_a_hand_written_file_whole(rig: Rig) -> None:
    push(str(rig.bare), rig.tmp / "person", {"apps/settings.yaml": HAND_WRITTEN}, "by hand")
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(plain_writer=True)
    rig.publish("app", "UPDATE", {"mode": "slow"})
    rig.drain(loop)
    loop.flush()
    written = rig.show("apps/settings.yaml")
    assert "#" not in written  # the comments went with the whole render
    assert "mode: slow" in written


def test_the_plain_writer_brings_no_bootstrap_files(rig: Rig) -> None:
    rig.branch = dataclasses.replace(rig.branch, commit_window_s=0.0)
    loop = rig.loop(plain_writer=True)
    rig.publish("app", "CREATE")
    rig.drain(loop)
    loop.flush()
    first = git("show", "--format=", "--name-only", "main", cwd=rig.bare).split()
    assert first == ["apps/team/configmaps/app.yaml"]


def test_the_seam_is_read_from_the_environment_only_when_set_to_one() -> None:
    assert plain_writer_switched_on({PLAIN_WRITER_TEST_SEAM: "1"})
    assert not plain_writer_switched_on({PLAIN_WRITER_TEST_SEAM: "true"})
    assert not plain_writer_switched_on({})
    assert not PLAIN_WRITER_TEST_SEAM.startswith("GITOPS_REVERSER_")  # never a user setting
