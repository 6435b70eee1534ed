"""C1 (reliability probe): a commit-message template is checked before it is used, and what it
renders is bounded (T4). Before: ``{nope}`` raised KeyError out of the branch worker (the
process exited, again on every restart), and ``{name:>200000}`` made every commit fail with
E2BIG. The CRD's CEL rule states the same grammar as ``templates.check``: both are compared
here on generated templates.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sandbox import paths
from shared.model import defaults, templates

VALUES: dict[str, object] = {
    "operation": "UPDATE",
    "kind": "ConfigMap",
    "namespace": "team",
    "name": "app",
    "path": "apps",
    "count": 3,
}


def _crd_pattern(field: str) -> re.Pattern[str]:
    """The regular expression of the GitProvider CRD's CEL rule on ``field``."""
    [crd] = [f for f in paths.own_crd_files() if f.name == "gitopsreverser.io_gitproviders.yaml"]
    schema: Any = yaml.safe_load(crd.read_text())["spec"]["versions"][0]["schema"]
    message = schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["commit"]
    [rule] = message["properties"]["message"]["properties"][field]["x-kubernetes-validations"]
    found = re.fullmatch(r"self\.matches\('(.*)'\)", rule["rule"].strip())
    assert found is not None
    return re.compile(found.group(1))


@pytest.mark.parametrize(
    "template",
    ["{operation} {nope}", "{name:>200000}", "{name!r}", "{name.__class__}", "{name[0]}",
     "{}", "{0}", "{name:>999999999}", "{name:x}", "{", "}", "{name", "{name:{width}}",
     "{name:05}", "{name:0}"],
)  # fmt: skip
def test_a_bad_event_template_is_refused_with_a_reason(template: str) -> None:
    with pytest.raises(templates.TemplateError):
        templates.render(template, templates.EVENT_FIELDS, VALUES)
    assert not _crd_pattern("eventTemplate").fullmatch(template)


@pytest.mark.parametrize(
    "template",
    [defaults.EVENT_TEMPLATE, "{{.Operation}} {{.Name}}", "{operation:>10} {name:^99}|{path:2}"],
)
def test_good_event_templates_render(template: str) -> None:
    message = templates.render(template, templates.EVENT_FIELDS, VALUES)
    assert message == template.format(**VALUES)
    assert _crd_pattern("eventTemplate").fullmatch(template)


def test_the_group_template_names_count_and_path_only() -> None:
    assert templates.render(defaults.GROUP_TEMPLATE, templates.GROUP_FIELDS, VALUES) == (
        "Mirror 3 API edits to apps"
    )
    with pytest.raises(templates.TemplateError, match="may name only count, path"):
        templates.render("{count} {name}", templates.GROUP_FIELDS, VALUES)


def test_the_rendered_message_is_bounded() -> None:
    """Widths are two digits at most, but a 4096-character template of them is still long:
    the message is cut to MAX_MESSAGE, far below the kernel's 128 KiB per argument."""
    template = "{name:>99}" * 409
    message = templates.render(template, templates.EVENT_FIELDS, VALUES)
    assert len(message) == templates.MAX_MESSAGE


PIECES = st.sampled_from(
    ["{", "}", "{{", "}}", ":", ">", "<", "^", "!r", ".", "0", "1", "9", " ", "x", "name",
     "path", "count", "kind", "operation", "namespace", "nope", "[0]", "{name}", "{count}"]
)  # fmt: skip


@given(st.lists(PIECES, max_size=12).map("".join))
def test_the_crd_rule_and_the_product_agree(template: str) -> None:
    """What the API server admits (the CEL rule) is exactly what the product renders."""
    for field, fields in (
        ("eventTemplate", templates.EVENT_FIELDS),
        ("groupTemplate", templates.GROUP_FIELDS),
    ):
        admitted = _crd_pattern(field).fullmatch(template) is not None
        try:
            templates.check(template, fields)
            renders = True
        except templates.TemplateError:
            renders = False
        assert admitted is renders, (field, template)
