"""A fast writer for the common, simple manifest, byte for byte what ``manifest.render`` writes.

Rendering with ruamel's round-trip emitter (pure Python) was half of the branch worker's time in
an initial snapshot. Most objects hold only short single-line strings, integers, booleans and
nulls: for them the output of ruamel (block style, 2-space mappings, sequences indented 4 with
the dash at 2) is easy to state exactly. ``simple_dump`` writes such a document and answers None
for anything it is not certain of (a string YAML might read as something else, a multi-line or
long string, a float, a nested list, non-ASCII text...), and the caller falls back to ruamel.
Tests compare the two on generated documents.

Both writers quote every string a YAML 1.1 reader would take for something else (M2): kubectl
and Argo CD read manifests with ``sigs.k8s.io/yaml`` (YAML 1.1), PyYAML is 1.1, and ruamel's
YAML 1.2 writes ``yes``, ``on`` or ``1:20`` plain, which those readers turn into a boolean or a
number. ``yaml11_typed`` says which strings those are, from YAML 1.1's type definitions.
"""

from __future__ import annotations

import re
from typing import Any

#: A string written plain: ASCII words of letters, digits and ``_ . / - : @ + = ,`` separated by
#: single spaces, starting with a letter (so never a number, a date or an indicator like ``-``),
#: no word ending in ``:`` (``a: b`` is a mapping). URLs and image references qualify.
_WORD = r"[A-Za-z0-9_./:@+=,-]*[A-Za-z0-9_./@+=,-]"
_PLAIN = re.compile(rf"[A-Za-z](?:{_WORD})?(?: {_WORD})*")
#: What a plain scalar means in YAML 1.1 (yaml.org/type: bool, null, int, float, timestamp,
#: merge, value), read broadly: any letter case, and YAML 1.2's number spellings too (``0o17``,
#: ``1e3``). Quoting a string that did not need it costs two characters; missing one changes
#: the object.
_YAML11_TYPED = re.compile(
    r"""(?ix)
    y|yes|n|no|true|false|on|off          # bool
    |~|null|                              # null (and the empty string)
    |[-+]?0b[01_]+                         # int: binary
    |[-+]?0o?[0-7_]+                       # int: octal (1.1 0 prefix, 1.2 0o)
    |[-+]?[0-9][0-9_]*                     # int: decimal (1_000)
    |[-+]?0x[0-9a-f_]+                     # int: hexadecimal
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?   # int/float: sexagesimal (1:20)
    |[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*(?:e[-+]?[0-9]+)?    # float: 1.5, .5, 1., 1.5e3
    |[-+]?[0-9][0-9_]*e[-+]?[0-9]+         # float: 1e3
    |[-+]?\.inf|\.nan                     # float: infinity, not a number
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}       # timestamp: a date
     (?:(?:t|[\x20\t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
        (?:[\x20\t]*(?:z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)?
    |<<|=                                  # merge key, value key
    """
)
#: Longer strings are left to ruamel (it may fold a line longer than its width).
_MAX_STRING = 200
#: Longer keys are left to ruamel (past 128 characters YAML writes an explicit ``? key``).
_MAX_KEY = 100


def yaml11_typed(text: str) -> bool:
    """Whether a YAML 1.1 reader would read ``text``, written plain, as something other than
    a string (a bool, null, number, date, merge or value key): it must be quoted."""
    return _YAML11_TYPED.fullmatch(text) is not None


def _scalar(value: Any) -> str | None:
    """The text of a scalar, or None when it is not one this writer is sure of."""
    kind = type(value)
    if kind is str:
        if len(value) > _MAX_STRING:
            return None
        if value == "":
            return "''"
        if yaml11_typed(value):  # digits, yes, 1_000...: single-quoted
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
    if yaml11_typed(key):
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
