"""Untouched multi-line scalars kept byte for byte through an in-place edit (P1).

ruamel's round trip writes a scalar in its own style: a literal or folded block with its own
indentation (content indented by the file's map indentation, an explicit indentation indicator
dropped), a quoted or plain scalar that spans lines joined onto one. Step 3 of
``shared.model.roundtrip`` keeps the file's own lines where the edit touched nothing, pairing
them with ruamel's by a line diff; with restyled lines on one side, that diff paired lines of
two different scalars (two blocks ending in the same words), an untouched stretch looked
touched, and ruamel's version replaced the file's (the outside checks of 2026-12-06: a
``hosts: >-`` block two fields away from the edit came back restyled).

So before the edit, each multi-line scalar whose value the edit keeps is replaced, in the text
and in the loaded documents alike, by a one-line token found nowhere else in the file: the edit
and the diff see the same single line on every side, and the file's own text is put back for
the token at the end (``restore``). What the scalar's header carried (chomping and indentation
indicators, a comment after the indicator) is part of that text. Pure: no IO.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

#: A path into a document: map keys as the plain object has them (strings), list indices.
Path = tuple[str | int, ...]

_STR = "tag:yaml.org,2002:str"
_HEADER = re.compile(r"[|>]([-+0-9]*)")


@dataclass(frozen=True, slots=True)
class Kept:
    """One untouched multi-line scalar: where it is, and the text a token stands in for."""

    document: int  # position in the file's composed documents
    path: Path
    token: str
    start: int  # character offsets of its text in the file
    end: int


def scalar_text(node: ScalarNode) -> str:
    """The string a scalar node holds. The round-trip composer marks each line break of a
    folded block (``>``) that folding turned into a space with a BEL (its constructor's
    ``fold_pos``); compared raw, every folded block looked changed. A BEL cannot be a block's
    own text (it is not printable), so dropping them is exact."""
    return str(node.value).replace("\a", "") if node.style == ">" else str(node.value)


def find(text: str, composed: Sequence[Node], wanted: Sequence[Any]) -> list[Kept]:
    """The multi-line scalars of ``text`` (composed as ``composed``) that stay as they are:
    those whose value is the same at the same path of ``wanted`` (per composed document, the
    plain object it must hold; None for a document that goes)."""
    found: list[tuple[int, Path, ScalarNode]] = []
    for position, (node, new) in enumerate(zip(composed, wanted, strict=True)):
        if new is not None:
            _walk(node, new, (), position, found)
    starts = _line_starts(text)
    salt = 0
    while f"gitops-reverser-kept-{salt}-" in text:
        salt += 1
    kept: list[Kept] = []
    for document, path, node in found:
        span = _span(text, starts, node)
        if span is not None:
            token = f"gitops-reverser-kept-{salt}-{len(kept)}-end"
            kept.append(Kept(document, path, token, *span))
    return kept


def _walk(node: Node, new: Any, path: Path, document: int, out: list[Any]) -> None:
    if isinstance(node, MappingNode) and isinstance(new, Mapping):
        for key, value in node.value:
            if isinstance(key, ScalarNode) and str(key.value) in new:
                name = str(key.value)
                _walk(value, new[name], (*path, name), document, out)
    elif isinstance(node, SequenceNode) and isinstance(new, list):
        for position, item in enumerate(node.value[: len(new)]):
            _walk(item, new[position], (*path, position), document, out)
    elif (
        isinstance(node, ScalarNode)
        and node.anchor is None  # an alias elsewhere would lose what it names
        and node.tag == _STR
        and isinstance(new, str)
        and (node.style in ("|", ">") or node.end_mark.line > node.start_mark.line)
        and scalar_text(node) == new
    ):
        out.append((document, path, node))


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _span(text: str, starts: list[int], node: ScalarNode) -> tuple[int, int] | None:
    """A flow scalar's characters; a block's from its indicator to the end of its last line
    (not that line's break): with keep chomping (``+``) its trailing empty lines are its
    value, otherwise they are spacing after it, left in the text (ruamel writes them as a
    comment after the value)."""
    start = int(node.start_mark.index)
    if node.style not in ("|", ">"):
        return start, int(node.end_mark.index)
    header = _HEADER.match(text, start)
    end_line, end_column = int(node.end_mark.line), int(node.end_mark.column)
    last = end_line - 1 if end_column == 0 else end_line
    first = int(node.start_mark.line)
    if header is None or last >= len(starts) - 1:
        return None
    if "+" not in header.group(1):
        lines = text[starts[first + 1] : starts[last + 1]].splitlines()
        filled = [n for n, line in enumerate(lines) if line.strip()]
        if not filled:
            return None  # an empty block: nothing to keep
        last = first + 1 + filled[-1]
    line = text[starts[last] : starts[last + 1]]
    return start, starts[last] + len(line.rstrip("\r\n"))


def shield(text: str, kept: Sequence[Kept]) -> str:
    """``text`` with each kept scalar's text replaced by its token."""
    for item in sorted(kept, key=lambda k: k.start, reverse=True):
        text = text[: item.start] + item.token + text[item.end :]
    return text


def restore(shielded: str, original: str, kept: Sequence[Kept]) -> str | None:
    """``shielded`` with each token replaced by the scalar text it stands in for in
    ``original``; None when a token is not there exactly once (the edit lost or doubled it:
    the candidate cannot be trusted)."""
    for item in kept:
        if shielded.count(item.token) != 1:
            return None
        shielded = shielded.replace(item.token, original[item.start : item.end])
    return shielded


def shield_object(obj: Mapping[str, Any], kept: Sequence[Kept]) -> dict[str, Any]:
    """A copy of a plain object with each kept scalar's value replaced by its token."""
    out = copy.deepcopy(dict(obj))
    for item in kept:
        parent: Any = out
        for step in item.path[:-1]:
            parent = parent[step]
        parent[item.path[-1]] = item.token
    return out
