"""C1 (reliability probe), T4: a commit template that slipped past admission fails only its own
GitTarget, in status, and the write is still committed (with the built-in wording).

Failed before the fix: ``{nope}`` raised KeyError out of ``BranchLoop.flush``, which is not a
branch failure: the branch-worker process exited on every restart; ``{name:>99999}`` produced a
99,999-character message.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.branch_worker.branch import BAD_TEMPLATE
from shared.model import templates
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _flush_one(rig: Rig, name: str = "tpl") -> None:
    loop = rig.loop()
    rig.publish(name, "CREATE")
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()


def test_an_unknown_field_fails_only_the_gittarget_in_status(rig: Rig) -> None:
    rig.branch = replace(rig.branch, message_one="{operation} {nope}")
    rig.configs.publish_branch(rig.branch)
    _flush_one(rig)
    assert "apps/team/configmaps/tpl.yaml" in rig.files()  # the write is not lost
    assert rig.commits()[0] == "CREATE ConfigMap team/tpl"  # the built-in template
    refusal = rig.configs.refusals(rig.target.uid)["template"]
    assert refusal["reason"] == BAD_TEMPLATE
    assert "{nope}" in refusal["message"]
    assert rig.events.pending_count(rig.bk) == 0


def test_a_huge_width_never_reaches_git(rig: Rig) -> None:
    rig.branch = replace(rig.branch, message_one="{name:>99999}")
    rig.configs.publish_branch(rig.branch)
    _flush_one(rig)
    assert "apps/team/configmaps/tpl.yaml" in rig.files()
    assert len(rig.commits()[0]) <= templates.MAX_MESSAGE
    assert rig.configs.refusals(rig.target.uid)["template"]["reason"] == BAD_TEMPLATE


def test_a_good_template_clears_the_condition(rig: Rig) -> None:
    rig.configs.set_refusal(rig.target.uid, BAD_TEMPLATE, "old", key="template")
    rig.branch = replace(rig.branch, message_one="[{operation:>7}] {name}")
    rig.configs.publish_branch(rig.branch)
    _flush_one(rig)
    assert rig.commits()[0] == "[ CREATE] tpl"
    assert "template" not in rig.configs.refusals(rig.target.uid)
