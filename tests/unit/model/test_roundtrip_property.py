"""P1/M5 as a property: for random documents with comments and random API edits, the in-place
edit decodes to exactly the API object (YAML 1.2 and 1.1) and every comment line survives that
is not inside a removed field (between a removed key's line and its value's last line; a map or
list that the API replaced with a value of another kind counts as removed).
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shared.model.manifest import parse, render
from shared.model.roundtrip import edit_file

KEYS = st.sampled_from(["a", "b", "c", "name", "image", "port", "yes", "on", "x-y", "1"])
SCALARS = st.one_of(
    st.sampled_from(["web", "yes", "on", "1e3", "1:20", "", "two words", "line\nnext\n"]),
    st.integers(-5, 500),
    st.booleans(),
    st.none(),
)


def _trees(depth: int) -> st.SearchStrategy[Any]:
    if depth == 0:
        return SCALARS
    inner = _trees(depth - 1)
    return st.one_of(
        SCALARS,
        st.dictionaries(KEYS, inner, min_size=1, max_size=4),
        st.lists(st.one_of(SCALARS, st.dictionaries(KEYS, SCALARS, min_size=1, max_size=3)),
                 min_size=1, max_size=3),
    )  # fmt: skip


SPECS = st.dictionaries(KEYS, _trees(2), min_size=1, max_size=5)


def _object(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "team"},
        "spec": spec,
    }


@st.composite
def _edits(draw: st.DrawFn, tree: Any) -> Any:
    """The API's version of ``tree``: fields kept, changed, removed or added, at any depth."""
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, value in tree.items():
            choice = draw(st.sampled_from(["keep", "keep", "edit", "remove"]))
            if choice == "keep":
                out[key] = value
            elif choice == "edit":
                out[key] = draw(_edits(value))
        for key in draw(st.lists(KEYS, max_size=2)):
            out.setdefault(key, draw(_trees(1)))
        return out or {"a": 1}
    if isinstance(tree, list) and tree and draw(st.booleans()):
        items = [draw(_edits(item)) for item in tree]
        return items[: draw(st.integers(1, len(items)))] + draw(st.lists(SCALARS, max_size=2))
    return draw(st.one_of(st.just(tree), _trees(1)))


@st.composite
def _commented(draw: st.DrawFn, text: str) -> tuple[str, list[str]]:
    """``text`` with full-line comments ``# cN`` (indented as the line they precede) and some
    end-of-line comments; returns the text and the full-line comments' lines."""
    lines = text.splitlines()
    out: list[str] = []
    comments: list[str] = []
    in_block, block_indent = False, 0
    for number, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if in_block and indent > block_indent:
            out.append(line)  # inside a literal block: a '#' line would be text
            continue
        in_block = line.rstrip().endswith("|") or line.rstrip().endswith("|-")
        block_indent = indent
        if number > 0 and draw(st.integers(0, 3)) == 0:
            comment = f"{' ' * indent}# c{number}"
            comments.append(comment)
            out.append(comment)
        eol = not in_block and draw(st.integers(0, 4)) == 0
        out.append(line + (f"  # e{number}" if eol else ""))
    return "\n".join(out) + "\n", comments


def _inside_removed(text: str, old: Any, new: Any) -> set[int]:
    """Line numbers of ``text`` inside a field of ``old`` that ``new`` lacks: from the key's
    (or list item's dash) line to the field's last line of content. A map or list that ``new``
    replaces with another kind of value counts as removed below its key line."""
    oracle = _Oracle(text.splitlines())
    oracle.walk(0, len(oracle.lines), old, new)
    return oracle.inside


class _Oracle:
    """Reads the fields of a rendered-and-commented document from its lines and indentation
    alone (independently of the code under test)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.inside: set[int] = set()

    def content(self, n: int) -> bool:
        return bool(self.lines[n].strip()) and not self.lines[n].lstrip().startswith("#")

    def indent(self, n: int) -> int:
        return len(self.lines[n]) - len(self.lines[n].lstrip())

    def last_of(self, n: int, stop: int) -> int:
        return max([m for m in range(n, stop) if self.content(m)], default=n)

    def mark(self, n: int, last: int, old_value: Any, new_value: Any, missing: bool) -> bool:
        """Mark a removed field (or a replaced map or list); True when it was one."""
        if missing:
            self.inside.update(range(n, last + 1))
            return True
        if isinstance(old_value, dict | list) and type(old_value) is not type(new_value):
            self.inside.update(range(n + 1, last + 1))
            return True
        return False

    def walk(self, start: int, end: int, old_map: Any, new_map: Any) -> None:
        if isinstance(old_map, list) and isinstance(new_map, list):
            self.walk_list(start, end, old_map, new_map)
        if not (isinstance(old_map, dict) and isinstance(new_map, dict)):
            return
        depth = _indent_of(self.lines, start, end)
        keys = [n for n in range(start, end) if self.content(n) and self.indent(n) == depth
                and _key_of(self.lines[n]) in old_map]  # fmt: skip
        for position, n in enumerate(keys):
            last = self.last_of(n, keys[position + 1] if position + 1 < len(keys) else end)
            key = _key_of(self.lines[n])
            if not self.mark(n, last, old_map[key], new_map.get(key), key not in new_map):
                self.walk(n + 1, last + 1, old_map[key], new_map[key])

    def walk_list(self, start: int, end: int, old_list: list[Any], new_list: list[Any]) -> None:
        starts = [n for n in range(start, end) if self.content(n)]
        dashes = [n for n in starts if self.indent(n) == self.indent(starts[0])] if starts else []
        for position, n in enumerate(dashes):
            last = self.last_of(n, dashes[position + 1] if position + 1 < len(dashes) else end)
            missing = position >= len(new_list)
            new_item = None if missing else new_list[position]
            if self.mark(n, last, old_list[position], new_item, missing):
                continue
            if isinstance(old_list[position], dict):
                self.lines[n] = self.lines[n].replace("-", " ", 1)  # its first key, as a key
                self.walk(n, last + 1, old_list[position], new_item)


def _key_of(line: str) -> str:
    match = re.match(r"\s*'?([^':]+)'?:", line)
    return match.group(1) if match else ""


def _indent_of(lines: list[str], start: int, end: int) -> int:
    for n in range(start, end):
        if lines[n].strip() and not lines[n].lstrip().startswith(("#", "- ")):
            return len(lines[n]) - len(lines[n].lstrip())
    return -1


#: A file, the object it holds, the API's version of it and the file's full-line comments.
Case = tuple[str, dict[str, Any], dict[str, Any], list[str]]


@st.composite
def _cases(draw: st.DrawFn) -> Case:
    spec = draw(SPECS)
    old = _object(spec)
    text, comments = draw(_commented(render(old).decode()))
    return text, old, _object(draw(_edits(spec))), comments


#: Issue 14: a comment line after a block scalar list item that the API changes to a plain
#: value (0 here, None in the report) joined that value's line (``- 0 # c12``, ``-  # c12``).
ISSUE_14 = """\
apiVersion: example.com/v1  # e0
kind: Widget
metadata:
  name: w
  namespace: team
spec:
  a: web
  b:  # e7
    # c8
    - a: web  # e8
    # c9
    - |
      line
      next
    # c12
    -   # e12
"""
ISSUE_14_OLD = _object({"a": "web", "b": [{"a": "web"}, "line\nnext\n", None]})
ISSUE_14_COMMENTS = ["    # c8", "    # c9", "    # c12"]


@settings(max_examples=300, deadline=None)
@given(case=_cases())
@example(case=(ISSUE_14, ISSUE_14_OLD, _object({"a": "web", "b": ["web", 0]}), ISSUE_14_COMMENTS))
@example(case=(ISSUE_14, ISSUE_14_OLD, _object({"a": "web", "b": [{"a": "web"}, None]}),
               ISSUE_14_COMMENTS))  # fmt: skip
def test_an_edit_decodes_to_the_api_object_and_keeps_the_comments(case: Case) -> None:
    text, old, new, comments = case
    assert parse(text.encode()) == [old]
    out = edit_file(text.encode(), [old], 0, new)
    assert out is not None, "an in-place edit exists for every such edit"
    assert parse(out) == [new]
    assert list(yaml.safe_load_all(out)) == [new]
    removed = _inside_removed(text, old, new)
    lines = text.splitlines()
    kept = out.decode().splitlines()
    for comment in comments:
        number = lines.index(comment)
        if number not in removed:
            assert comment in kept, f"{comment!r} was lost"
