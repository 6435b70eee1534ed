"""P1 and M5: an update edits a document a person wrote in place. Comments, key order, quoting,
indentation and the file's other documents are kept; only changed fields change; a field the API
object lacks is removed; and the result decodes to exactly the API object under YAML 1.2 and
YAML 1.1 readers (issue 11's quoting: ``yes`` stays a string).
"""

from __future__ import annotations

import difflib
from typing import Any

import yaml

from shared.model.manifest import parse, render
from shared.model.roundtrip import edit_file

HAND_WRITTEN = """\
# The team's settings: edit with care
apiVersion: v1
kind: ConfigMap
metadata:
    name: app   # the name never changes
    namespace: team
    labels: {tier: "web", team: blue}
# What the app reads
data:
    mode: "fast"   # fast or slow
    # the next one is quoted on purpose
    flag: 'on'
    script: |
      echo one
      echo two
    old:
        nested: "1"   # inside the field that goes
        # also inside
        more: x
    # about the log level, below the removed field
    level: info
---
# the second document stays as it is
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: team}
data:
  z: "9"
"""


def _docs(text: str) -> list[dict[str, Any]]:
    return parse(text.encode())


def _api(**data: Any) -> dict[str, Any]:
    doc = _docs(HAND_WRITTEN)[0]
    doc["data"] = data
    return doc


def _changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def _edit(text: str, index: int, body: dict[str, Any] | None) -> str:
    out = edit_file(text.encode(), _docs(text), index, body)
    assert out is not None
    return out.decode()


def test_a_changed_value_changes_one_line_and_keeps_every_comment() -> None:
    """P1: one changed field is a one-line diff; the rest of the file is byte for byte kept."""
    body = _api(mode="slow", flag="on", script="echo one\necho two\n", level="info",
                old={"nested": "1", "more": "x"})  # fmt: skip
    out = _edit(HAND_WRITTEN, 0, body)
    assert _changed_lines(HAND_WRITTEN, out) == [
        '-    mode: "fast"   # fast or slow',
        '+    mode: "slow"   # fast or slow',
    ]
    assert _docs(out)[0] == body


def test_a_removed_nested_field_takes_its_inside_comments_and_keeps_the_one_below() -> None:
    """M5: ``old`` is gone from the API object, so it goes from the file with the comments
    written inside it; the comment under it (about ``level``) stays."""
    body = _api(mode="fast", flag="on", script="echo one\necho two\n", level="info")
    out = _edit(HAND_WRITTEN, 0, body)
    assert "old:" not in out and "inside" not in out
    assert "    # about the log level, below the removed field\n    level: info\n" in out
    assert _changed_lines(HAND_WRITTEN, out) == [
        "-    old:",
        '-        nested: "1"   # inside the field that goes',
        "-        # also inside",
        "-        more: x",
    ]
    assert _docs(out) == [body, _docs(HAND_WRITTEN)[1]]


def test_the_other_documents_of_the_file_are_kept_byte_for_byte() -> None:
    body = _api(mode="fast", flag="on", script="echo one\necho two\n", level="debug",
                old={"nested": "1", "more": "x"})  # fmt: skip
    out = _edit(HAND_WRITTEN, 0, body)
    second = HAND_WRITTEN[HAND_WRITTEN.index("---\n") :]
    assert out.endswith(second)
    assert out.startswith("# The team's settings: edit with care\n")


def test_a_flow_mapping_stays_in_flow_style() -> None:
    body = _docs(HAND_WRITTEN)[0]
    body["metadata"]["labels"] = {"tier": "web", "team": "green"}
    out = _edit(HAND_WRITTEN, 0, body)
    assert _changed_lines(HAND_WRITTEN, out) == [
        '-    labels: {tier: "web", team: blue}',
        '+    labels: {tier: "web", team: green}',
    ]


def test_a_block_scalar_is_kept_unchanged_and_rewritten_as_a_block_when_it_changes() -> None:
    body = _docs(HAND_WRITTEN)[0]
    body["data"]["script"] = "echo one\necho three\n"
    out = _edit(HAND_WRITTEN, 0, body)
    assert "    script: |\n" in out and "echo three" in out
    assert _docs(out)[0] == body
    assert all("script" not in line and "mode" not in line for line in _changed_lines(
        HAND_WRITTEN, out))  # fmt: skip


def test_a_new_field_goes_after_its_predecessor_in_the_files_indentation() -> None:
    body = _docs(HAND_WRITTEN)[0]
    body["data"] = {"mode": "fast", "extra": "yes", **{k: v for k, v in body["data"].items()
                                                         if k != "mode"}}  # fmt: skip
    out = _edit(HAND_WRITTEN, 0, body)
    assert _changed_lines(HAND_WRITTEN, out) == ["+    extra: 'yes'"]
    assert yaml.safe_load_all(out).__next__() == body, "YAML 1.1 reads the string 'yes'"


def test_yaml11_words_stay_strings_for_every_reader() -> None:
    """Issue 11 (M2): a changed value ``on``, ``1e3`` or ``yes`` is quoted, so kubectl and
    Argo CD (YAML 1.1) read the same object as the folder's reader (YAML 1.2)."""
    body = _docs(HAND_WRITTEN)[0]
    body["data"].update(mode="1e3", level="on", flag="yes")
    out = _edit(HAND_WRITTEN, 0, body)
    assert next(iter(yaml.safe_load_all(out))) == body
    assert _docs(out)[0] == body


def test_removing_a_document_keeps_the_others_and_their_comments() -> None:
    out = _edit(HAND_WRITTEN, 1, None)
    assert out.startswith(HAND_WRITTEN[: HAND_WRITTEN.index("---\n")])
    assert "other" not in out
    assert _docs(out) == [_docs(HAND_WRITTEN)[0]]


def test_a_kubectl_style_file_keeps_its_list_indentation() -> None:
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: web   # the main one\n"
        "        image: nginx:1.25\n      - name: side\n        image: busybox\n"
    )
    body = _docs(text)[0]
    body["spec"]["template"]["spec"]["containers"].append({"name": "third", "image": "x"})
    body["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.27"
    out = _edit(text, 0, body)
    assert _changed_lines(text, out) == [
        "-        image: nginx:1.25",
        "+        image: nginx:1.27",
        "+      - image: x",  # new content is written as the product writes it (sorted)
        "+        name: third",
    ]


def test_a_file_the_product_wrote_edits_to_what_the_product_writes() -> None:
    """The in-place edit and the whole rewrite agree on the product's own files (which the
    writer therefore rewrites whole, the faster way)."""
    before = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "t"},
              "data": {"a": "1", "b": "yes", "c": "x\ny\n"}}  # fmt: skip
    after = {**before, "data": {"a": "2", "c": "x\nz\n", "d": "1:20"}}
    out = edit_file(render(before), [before], 0, after)
    assert out == render(after)


def test_text_that_does_not_round_trip_is_left_to_the_caller() -> None:
    """No in-place edit is guessed at: None, and the writer writes the file whole (M5)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
    assert edit_file(b"\xff\xfe not text", [body], 0, body) is None


BLOCK_ITEMS = """\
apiVersion: v1
kind: ConfigMap
metadata:
    name: app
    namespace: team
data:
    steps:
      - |
        make
      # after the first step
      - test
"""


def test_a_comment_after_a_block_scalar_item_stays_on_its_own_line_when_the_item_changes() -> None:
    """Issue 14 (P1): ruamel keeps the comment lines below a block scalar with it, without the
    line break the scalar wrote; the API's plain value, null or map in its place took them onto
    its own line (``- 0 # after the first step``). They stay a line of their own."""
    for item, written in ((0, ["+      - 0"]), (None, ["+      - "]),
                          ({"run": "make"}, ["+      - run: make"])):  # fmt: skip
        body = _docs(BLOCK_ITEMS)[0]
        body["data"]["steps"][0] = item
        out = _edit(BLOCK_ITEMS, 0, body)
        assert _changed_lines(BLOCK_ITEMS, out) == ["-      - |", "-        make", *written]
        assert "      # after the first step\n      - test\n" in out
        assert _docs(out) == [body]
        assert next(iter(yaml.safe_load_all(out))) == body


def test_the_comments_after_a_scalar_follow_the_map_that_replaces_it() -> None:
    """The comments after a value (on its line and below it) go after the map or list that
    replaces it, not between its key and its content."""
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n"
        "  mode: fast  # fast or slow\n  # about level\n  level: info\n"
    )
    body = _docs(text)[0]
    body["data"]["mode"] = {"speed": "slow", "when": ["now"]}
    out = _edit(text, 0, body)
    assert _changed_lines(text, out) == [
        "-  mode: fast  # fast or slow",
        "+  mode:",
        "+    speed: slow",
        "+    when:",
        "+      - now   # fast or slow",  # the comment keeps its column
    ]
    assert _docs(out) == [body]


def test_an_end_of_line_comment_keeps_its_column_when_the_value_changes_length() -> None:
    """P1: a comment after a value stays on that value's line, at the column the person put it
    (comments aligned in a column stay aligned); a value too long for that column pushes it to
    one space after the value. The report that ``"medium"   # fast or slow`` lost two spaces is
    this: the comment did not move."""
    body = _api(mode="medium", flag="on", script="echo one\necho two\n", level="info",
                old={"nested": "1", "more": "x"})  # fmt: skip
    out = _edit(HAND_WRITTEN, 0, body)
    assert _changed_lines(HAND_WRITTEN, out) == [
        '-    mode: "fast"   # fast or slow',
        '+    mode: "medium" # fast or slow',
    ]
    body["data"]["mode"] = "s"
    out = _edit(HAND_WRITTEN, 0, body)
    assert '\n    mode: "s"      # fast or slow\n' in out
