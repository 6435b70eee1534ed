"""Step 1 of an in-place edit (``roundtrip.py``, P1): the lines of the fields an API object
lacks, cut out of a person's manifest file, using the positions the YAML composer gives every
node.

A field's lines run from its key to the last line holding its value, so a comment *below* a
removed field (about what follows) stays, and the comments inside it go with it. A block map,
list or block scalar the edit replaces whole keeps its key line, as a null that the
round-trip edit sets. Pure: no IO.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from shared.model.kept_scalars import scalar_text

Lines = list[str]
#: Lines ``first`` to ``last`` (inclusive) of a text, and what replaces them.
Cut = tuple[int, int, Lines]


def compose(text: str) -> list[Node]:
    """Every document of ``text`` composed by the round-trip loader (comments attached)."""
    return list(YAML(typ="rt", pure=True).compose_all(text))


def cut_removed_fields(text: str, node: Node, body: Mapping[str, Any] | None) -> str:
    """``text`` without the lines of the block fields ``body`` lacks (none for a removal);
    ``node`` is the edited document's, composed from ``text``."""
    if body is None:
        return text
    lines = text.splitlines(keepends=True)
    cuts: list[Cut] = []
    _removed_in(node, body, lines, cuts)
    for first, last, replacement in sorted(cuts, reverse=True):
        lines[first : last + 1] = replacement
    return "".join(lines)


def _removed_in(node: Node, new: Any, lines: Lines, cuts: list[Cut]) -> None:
    """Collect the line ranges of fields under ``node`` that ``new`` lacks or replaces whole
    (a map or list that became another kind of value, a changed block scalar): what is cut
    goes with the comments inside it, and the comments below it stay. A replaced field keeps
    its key line, as a null that the round-trip edit sets."""
    if isinstance(node, MappingNode) and not node.flow_style and isinstance(new, Mapping):
        for key, value in node.value:
            if isinstance(key, ScalarNode):
                _field_cut(key, value, new, lines, cuts)
    elif isinstance(node, SequenceNode) and not node.flow_style and isinstance(new, list):
        for position, item in enumerate(node.value):
            dash = _dash_line(item, lines)
            first = int(item.start_mark.line)
            if position < len(new) and dash is not None and _kind_changed(item, new[position]):
                # a map or list item that became another kind of value: a null to set
                dash_only = lines[first][: item.start_mark.column].rstrip() + "\n"
                cuts.append((first, max(first, _last_line(item)), [dash_only]))
            elif position < len(new):
                _removed_in(item, new[position], lines, cuts)
            elif dash is not None:
                cuts.append((first, max(first, _last_line(item)), []))


def _field_cut(
    key: Node, value: Node, new: Mapping[str, Any], lines: Lines, cuts: list[Cut]
) -> None:
    """The cut of one ``key: value`` field of a block map, if ``new`` (the map) wants one."""
    first, last = int(key.start_mark.line), _field_end(key, value)
    before_key = lines[first][: key.start_mark.column]
    if key.value not in new:
        if not before_key.strip():
            cuts.append((first, last, []))
        elif before_key.strip() == "-":  # a list item's first key: the dash stays
            cuts.append((first, last, [before_key.rstrip() + "\n"]))
    elif _replaced_whole(key, value, new[key.value], lines):
        bare_key = lines[first]  # the key, with any comment after it
        if value.start_mark.line == first:  # a block scalar's indicator goes
            bare_key = bare_key[: value.start_mark.column].rstrip() + "\n"
        cuts.append((first, last, [bare_key]))
    else:
        _removed_in(value, new[key.value], lines, cuts)


def _kind_changed(node: Node, new: Any) -> bool:
    """A block map or list that ``new`` replaces with another kind of value."""
    if not isinstance(node, MappingNode | SequenceNode) or node.flow_style:
        return False
    return not isinstance(new, Mapping if isinstance(node, MappingNode) else list)


def _replaced_whole(key: Node, value: Node, new: Any, lines: Lines) -> bool:
    """A block map or list that ``new`` replaces with another kind of value, or a block scalar
    ``new`` changes, written on the lines below its key."""
    if isinstance(value, ScalarNode):
        changed = value.style in ("|", ">") and scalar_text(value) != new
    else:
        changed = _kind_changed(value, new)
    return changed and value.end_mark.line > key.start_mark.line and _starts_its_line(key, lines)


def _starts_its_line(node: Node, lines: Lines) -> bool:
    """Nothing but indentation before ``node`` on its line (not the first key after a dash)."""
    line = lines[node.start_mark.line]
    return not line[: node.start_mark.column].strip()


def _dash_line(item: Node, lines: Lines) -> int | None:
    """The line of a list item whose dash is on the item's first line, alone before it."""
    line = lines[item.start_mark.line][: item.start_mark.column]
    return item.start_mark.line if line.strip() == "-" else None


def _last_line(node: Node) -> int:
    """The last line holding any of ``node``'s text (not the comments that follow it); -1 for
    an empty plain scalar (a null written as nothing), whose marks are those of the next token."""
    if isinstance(node, ScalarNode):
        line, column = int(node.end_mark.line), int(node.end_mark.column)
        if node.value == "" and node.style is None:
            return -1
        if node.style in ("|", ">"):  # a block scalar ends at the start of the next line
            return line - 1 if column == 0 else line
        return line - 1 if column == 0 and line > node.start_mark.line else line
    if getattr(node, "flow_style", False) or not node.value:
        return int(node.end_mark.line)
    if isinstance(node, MappingNode):
        return _field_end(*node.value[-1])
    last = node.value[-1]
    return max(int(last.start_mark.line), _last_line(last))


def _field_end(key: Node, value: Node) -> int:
    """The last line of a ``key: value`` field."""
    return max(int(key.start_mark.line), _last_line(value))
