"""C1 (reliability probe), T4, issue 15: a commit carries its GitProvider's Go template rendered
with the Go operator's variables; a template that slipped past admission fails only its own
GitTarget, in status, and the write is still committed (with the built-in wording).

Failed before the Go-template work: ``[{{.Operation}}] {{.Name}}`` was ``str.format`` text
and rendered as the literal ``[{.Operation}] {.Name}``; a group template could not name the
GitTarget, the operations or the resources. Failed before the C1 fix: ``{nope}`` raised
KeyError out of ``BranchLoop.flush`` (the process exited on every restart).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.branch_worker.conditions import BAD_TEMPLATE
from shared.model import templates
from shared.model.events import Operation
from tests.integration.branch_worker.conftest import Rig

pytestmark = pytest.mark.integration


def _flush(rig: Rig, *writes: tuple[str, Operation]) -> None:
    loop = rig.loop()
    for name, operation in writes:
        rig.publish(name, operation)
    rig.drain(loop)
    rig.clock.now += 10
    loop.flush()


def test_a_commit_carries_the_rendered_event_template(rig: Rig) -> None:
    template = (
        '{{.Operation | printf "%-6s"}}|{{.APIVersion}}|{{.Namespace}}/{{.Name}}|{{.GitTarget}}'
    )
    rig.branch = replace(rig.branch, message_one=template)
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("tpl", "CREATE"))
    assert rig.commits()[0] == "CREATE|v1|team/tpl|gt"
    assert "template" not in rig.configs.refusals(rig.target.uid)


def test_a_commit_carries_the_rendered_group_template(rig: Rig) -> None:
    template = (
        "{{.Count}} edits on {{.GitTarget}} ({{range $op, $n := .Operations}}{{$op}} {{$n}} "
        "{{end}}): {{range $i, $r := .Resources}}{{if $i}}, {{end}}{{$r.Name}}{{end}}"
    )
    rig.branch = replace(rig.branch, message_many=template)
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("a", "CREATE"), ("b", "CREATE"), ("c", "UPDATE"))
    assert rig.commits()[0] == "3 edits on gt (CREATE 2 UPDATE 1 ): a, b, c"


def test_an_unknown_field_fails_only_the_gittarget_in_status(rig: Rig) -> None:
    rig.branch = replace(rig.branch, message_one="{{.Operation}} {{.Nope}}")
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("tpl", "CREATE"))
    assert "apps/team/configmaps/tpl.yaml" in rig.files()  # the write is not lost
    assert rig.commits()[0] == "[CREATE] v1/configmaps/tpl"  # the built-in template
    refusal = rig.configs.refusals(rig.target.uid)["template"]
    assert refusal["reason"] == BAD_TEMPLATE
    assert "can't evaluate field Nope" in refusal["message"]
    assert rig.events.pending_count(rig.bk) == 0


def test_an_old_syntax_template_falls_back_and_says_why(rig: Rig) -> None:
    """A GitProvider stored with the old ``{name}`` syntax before this version."""
    rig.branch = replace(rig.branch, message_one="{operation} {kind} {name}")
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("tpl", "CREATE"))
    assert rig.commits()[0] == "[CREATE] v1/configmaps/tpl"
    assert "old {operation} syntax" in rig.configs.refusals(rig.target.uid)["template"]["message"]


def test_a_huge_message_never_reaches_git(rig: Rig) -> None:
    rig.branch = replace(rig.branch, message_one='{{printf "%1000s" .Name}}' * 100)
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("tpl", "CREATE"))
    assert "apps/team/configmaps/tpl.yaml" in rig.files()
    assert len(rig.commits()[0]) <= templates.MAX_MESSAGE


def test_a_good_template_clears_the_condition(rig: Rig) -> None:
    rig.configs.set_refusal(rig.target.uid, BAD_TEMPLATE, "old", key="template")
    rig.branch = replace(rig.branch, message_one='[{{printf "%7s" .Operation}}] {{.Name}}')
    rig.configs.publish_branch(rig.branch)
    _flush(rig, ("tpl", "CREATE"))
    assert rig.commits()[0] == "[ CREATE] tpl"
    assert "template" not in rig.configs.refusals(rig.target.uid)
