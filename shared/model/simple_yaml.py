"""A fast writer for the common, simple manifest, byte for byte what ``manifest.render`` writes.

Rendering with ruamel's round-trip emitter (pure Python) was half of the branch worker's time in
an initial snapshot. Most objects hold only short single-line strings, integers, booleans and
nulls: for them the output of ruamel (block style, 2-space mappings, sequences indented 4 with
the dash at 2) is easy to state exactly. ``simple_dump`` writes such a document and answers None
for anything it is not certain of (a string YAML might read as something else, a multi-line or
long string, a float, a nested list, non-ASCII text...), and the caller falls back to ruamel.
Tests compare the two on generated documents.
"""

from __future__ import annotations

import re
from typing import Any

#: A string written plain: ASCII words of letters, digits and ``_ . / - : @ + = ,`` separated by
#: single spaces, starting with a letter (so never a number, a date or an indicator like ``-``),
#: no word ending in ``:`` (``a: b`` is a mapping). URLs and image references qualify.
_WORD = r"[A-Za-z0-9_./:@+=,-]*[A-Za-z0-9_./@+=,-]"
_PLAIN = re.compile(rf"[A-Za-z](?:{_WORD})?(?: {_WORD})*")
#: A string of digits, which YAML would read as a number: ruamel single-quotes it.
_DIGITS = re.compile(r"[0-9]+")
#: Words YAML 1.2 (ruamel's default) reads as a boolean or null: ruamel single-quotes them.
#: (YAML 1.1's ``yes``, ``no``, ``on``, ``off``, ``y`` and ``n`` are plain strings in 1.2.)
_QUOTED_WORDS = frozenset(
    {"true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL"}
)
#: Longer strings are left to ruamel (it may fold a line longer than its width).
_MAX_STRING = 200
#: Longer keys are left to ruamel (past 128 characters YAML writes an explicit ``? key``).
_MAX_KEY = 100


def _scalar(value: Any) -> str | None:
    """The text of a scalar, or None when it is not one this writer is sure of."""
    kind = type(value)
    if kind is str:
        if len(value) > _MAX_STRING:
            return None
        if value == "":
            return "''"
        if _DIGITS.fullmatch(value) or value in _QUOTED_WORDS:
            return f"'{value}'"
        if _PLAIN.fullmatch(value):
            return str(value)
        return None
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    return None


def _key(key: Any) -> str | None:
    if type(key) is not str or len(key) > _MAX_KEY:
        return None
    if key in _QUOTED_WORDS:
        return f"'{key}'"
    return str(key) if _PLAIN.fullmatch(key) else None


def _mapping(value: dict[Any, Any], indent: int, out: list[str]) -> bool:
    pad = " " * indent
    for key, item in value.items():
        name = _key(key)
        if name is None:
            return False
        if type(item) is dict and item:
            out.append(f"{pad}{name}:")
            if not _mapping(item, indent + 2, out):
                return False
        elif type(item) is list and item:
            out.append(f"{pad}{name}:")
            if not _sequence(item, indent + 2, out):
                return False
        elif item is None:
            out.append(f"{pad}{name}:")
        elif type(item) is dict or type(item) is list:  # empty: flow style
            out.append(f"{pad}{name}: {'{}' if type(item) is dict else '[]'}")
        else:
            text = _scalar(item)
            if text is None:
                return False
            out.append(f"{pad}{name}: {text}")
    return True


def _sequence(value: list[Any], dash: int, out: list[str]) -> bool:
    pad = " " * dash
    for item in value:
        if type(item) is dict and item:
            first = len(out)
            if not _mapping(item, dash + 2, out):
                return False
            out[first] = f"{pad}- {out[first][dash + 2 :]}"
            continue
        text = _scalar(item)
        if text is None:
            return False
        out.append(f"{pad}- {text}")
    return True


def simple_dump(document: dict[Any, Any]) -> str | None:
    """The YAML of an ordered document, or None when it is not simple enough to be sure."""
    out: list[str] = []
    if not document or not _mapping(document, 0, out):
        return None
    out.append("")
    return "\n".join(out)
