"""C1 (reliability probe), issue 15: a commit-message template is Go ``text/template`` with the
Go operator's variables, checked before it is used, and what it renders is bounded (T4).
Checking a template, whatever its text, raises nothing but ``TemplateError``, and a rendered
message is never longer than ``MAX_MESSAGE``; the CRD's coarse CEL rules never refuse a
template the product renders.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox import paths
from shared.model import defaults, templates
from shared.model.ids import ObjectId

CM = ObjectId("", "v1", "configmaps", "ConfigMap", "team", "app")
DEPLOY = ObjectId("apps", "v1", "deployments", "Deployment", "team", "web")
EVENT = templates.event_data("UPDATE", DEPLOY, "", "apps")
GROUP = templates.group_data(
    "GitOps Reverser", "apps", [("CREATE", CM), ("UPDATE", DEPLOY), ("UPDATE", CM)]
)


@functools.cache
def _crd_rules(field: str) -> list[str]:
    """The regular expressions of the GitProvider CRD's CEL rules on ``field``."""
    [crd] = [f for f in paths.own_crd_files() if f.name == "gitopsreverser.io_gitproviders.yaml"]
    schema: Any = yaml.safe_load(crd.read_text())["spec"]["versions"][0]["schema"]
    commit = schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["commit"]
    rules = commit["properties"]["message"]["properties"][field]["x-kubernetes-validations"]
    return [r["rule"].strip() for r in rules]


def _admitted(field: str, template: str) -> bool:
    """What the CEL rules say, evaluated here the way CEL's ``contains``/``matches`` do."""
    for rule in _crd_rules(field):
        found = re.fullmatch(r"(self\.contains\('(.*)'\) \|\| )?!self\.matches\('(.*)'\)", rule)
        assert found is not None, rule
        if found.group(2) is not None and found.group(2) in template:
            continue
        if re.search(found.group(3), template):
            return False
    return True


def test_the_defaults_are_the_go_operators() -> None:
    """facts 2.1: the Go operator's default event and group templates."""
    assert templates.render(defaults.EVENT_TEMPLATE, templates.EVENT, EVENT) == (
        "[UPDATE] apps/v1/deployments/web"
    )
    assert templates.render(defaults.GROUP_TEMPLATE, templates.GROUP, GROUP) == (
        "GitOps Reverser on apps: 3 resource(s)"
    )


def test_the_event_variables() -> None:
    template = (
        "{{.Operation}}|{{.Group}}|{{.Version}}|{{.Resource}}|{{.Namespace}}|{{.Name}}"
        "|{{.APIVersion}}|{{.Username}}|{{.GitTarget}}"
    )
    assert templates.render(template, templates.EVENT, EVENT) == (
        "UPDATE|apps|v1|deployments|team|web|apps/v1||apps"
    )
    core = templates.event_data("DELETE", CM, "alice", "t")
    assert templates.render("{{.APIVersion}} {{.Username}}", templates.EVENT, core) == "v1 alice"


def test_the_group_variables_count_operations_and_dedupe_resources() -> None:
    template = (
        "{{.Count}} by {{.Author}}:{{range $op, $n := .Operations}} {{$op}}={{$n}}{{end}}"
        " [{{range $i, $r := .Resources}}{{if $i}}, {{end}}{{$r.Resource}}/{{$r.Name}}{{end}}]"
        " deletes={{.Operations.DELETE}}"
    )
    assert templates.render(template, templates.GROUP, GROUP) == (
        "3 by GitOps Reverser: CREATE=1 UPDATE=2 [configmaps/app, deployments/web] deletes=0"
    )


@pytest.mark.parametrize(
    ("template", "which", "error"),
    [
        ("{{.Nope}}", templates.EVENT, "can't evaluate field Nope in type EventData"),
        ("{{.Count}}", templates.EVENT, "can't evaluate field Count"),
        ("{{.Operation}}", templates.GROUP, "can't evaluate field Operation in type GroupData"),
        ("{{if .Count}}{{else}}{{.Nme}}{{end}}", templates.GROUP, "field Nme"),  # untaken branch
        ("{{range .Resources}}{{.Kind}}{{end}}", templates.GROUP, "field Kind in type Resource"),
        ("{{.Operations.PATCH}}", templates.GROUP, 'no entry for key "PATCH"'),
        ('{{eq .Count "3"}}', templates.GROUP, "incompatible types"),  # found on sample data
        ('{{template "x"}}', templates.EVENT, "{{template}} is refused"),
        ("{operation} {kind}", templates.EVENT, "old {operation} syntax"),
        ("at {path}", templates.GROUP, "e.g. {{.GitTarget}}"),
        ("x" * 4097, templates.EVENT, "longer than 4096"),
    ],
)
def test_a_bad_template_is_refused_with_a_reason(
    template: str, which: templates.Variables, error: str
) -> None:
    with pytest.raises(templates.TemplateError) as caught:
        templates.check(template, which)
    assert error in str(caught.value)
    assert which.field in str(caught.value)


def test_text_without_actions_or_old_fields_is_kept() -> None:
    """Single braces are plain text in Go syntax; only the old field names are refused."""
    assert templates.render("fix {weird} }}", templates.EVENT, EVENT) == "fix {weird} }}"


def test_the_rendered_message_is_bounded() -> None:
    template = '{{range .Resources}}{{printf "%999s" .Name}}{{end}}' * 40
    many = templates.group_data("a", "t", [("CREATE", ObjectId("", "v1", "c", "C", "n", str(i)))
                                           for i in range(50)])  # fmt: skip
    assert len(templates.render(template, templates.GROUP, many)) == templates.MAX_MESSAGE


def test_a_nul_never_reaches_git() -> None:
    assert templates.render('a{{"\\x00"}}b', templates.EVENT, EVENT) == "ab"


PIECES = st.sampled_from(
    ["{{", "}}", "{{-", "-}}", " ", "{", "}", ".", ".Name", ".Count", ".Resources", "$", "$x",
     ":=", "=", "|", "(", ")", "if", "else", "end", "range", "with", "break", "define", "len",
     "index", "printf", "print", "eq", "lt", "and", "not", '"%s"', '"%999d"', "0", "-1", "1.5",
     "/*", "*/", "`", '"', "\\", "x", "\n", "{name}", "$k, $v :=", ".Operations", ".Nope"]
)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(PIECES, max_size=24).map("".join))
def test_checking_raises_only_template_error_and_render_is_bounded(template: str) -> None:
    for which, data, field in (
        (templates.EVENT, EVENT, "eventTemplate"),
        (templates.GROUP, GROUP, "groupTemplate"),
    ):
        try:
            templates.check(template, which)
        except templates.TemplateError:
            continue
        assert _admitted(field, template), "CEL refuses a template the product renders"
        try:
            message = templates.render(template, which, data)
        except templates.TemplateError:
            continue
        assert len(message) <= templates.MAX_MESSAGE
