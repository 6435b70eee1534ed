"""``manifest.render`` in one pass for the common, simple manifest: the same bytes, less work.

``manifest.render`` builds the document as it is written (``ordered_document``: apiVersion,
kind and the kept metadata first, everything else with its keys sorted, all the way down), then
writes it (``simple_yaml.simple_dump``, or ruamel). A profile of the branch worker in an initial
snapshot of 11,000 objects put building the ordered copy and writing it at an eighth of the
worker's time, about half of it the copy. ``fast_render`` walks the object once, in the order
``ordered_document`` gives, and writes each line as ``simple_dump`` would, so no copy is made.
It answers None for anything ``simple_dump`` would not write (a float, a multi-line or long
string, a nested list, a key YAML needs quoted...) and for shapes it does not handle itself
(a mapping that is not a dict, two keys that read the same as text); the caller then takes the
reference path. Tests compare it with ruamel's output byte for byte on generated objects.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from shared.model.simple_yaml import _MAX_KEY, _MAX_STRING, _PLAIN, yaml11_typed

#: Metadata written, in this order (``manifest.KEPT_METADATA``).
_KEPT = ("name", "namespace", "labels", "annotations")
_HEAD = ("apiVersion", "kind")


class _NotSimple(Exception):
    """The object holds something only the reference path writes."""


def fast_render(obj: Mapping[str, Any]) -> bytes | None:
    """``manifest.render(obj)`` when the object is simple, else None."""
    if type(obj) is not dict or not obj:
        return None
    out: list[str] = []
    try:
        for key in _HEAD:
            if key in obj:
                if type(obj[key]) in (dict, list):
                    return None  # written as given, unsorted: left to the reference path
                _item(key, obj[key], "", out)
        metadata = obj.get("metadata")
        if isinstance(metadata, Mapping):
            if type(metadata) is not dict:
                return None
            kept = [key for key in _KEPT if key in metadata]
            if kept:
                out.append("metadata:")
                for key in kept:
                    _item(key, metadata[key], "  ", out)
            else:
                out.append("metadata: {}")
        rest = [key for key in obj if key not in _HEAD and key != "metadata"]
        for key in _sorted(rest):
            _item(key, obj[key], "", out)
    except _NotSimple:
        return None
    if not out:
        return None
    out.append("")
    return "\n".join(out).encode()


def _sorted(keys: list[Any]) -> list[Any]:
    """Keys in ``ordered_document``'s order (by their text); two that read the same as text
    would become one key there: not simple."""
    if all(type(key) is str for key in keys):
        return sorted(keys)  # a dict's text keys are distinct
    ordered = sorted(keys, key=str)
    for before, after in itertools.pairwise(ordered):
        if str(before) == str(after):
            raise _NotSimple
    return ordered


def _typed(text: str) -> bool:
    """``yaml11_typed``, answered at once for a string longer than five characters that starts
    with a letter: every YAML 1.1 reading of such a plain scalar starts with a digit, a sign,
    a dot, ``~``, ``<`` or ``=``, or is a word of at most five letters (``false``)."""
    if len(text) > 5 and text[:1].isalpha():
        return False
    return yaml11_typed(text)


#: Keys as written, by their text: the same few keys come back in every object.
_NAMES: dict[str, str] = {}
_NAMES_KEPT = 4096


def _name(key: Any) -> str:
    """A mapping key as written: its text, quoted when YAML 1.1 would read it as another type."""
    text = str(key)
    known = _NAMES.get(text)
    if known is not None:
        return known
    if len(text) > _MAX_KEY:
        raise _NotSimple
    if _typed(text):
        name = f"'{text}'"
    elif _PLAIN.fullmatch(text) is None:
        raise _NotSimple
    else:
        name = text
    if len(_NAMES) >= _NAMES_KEPT:
        _NAMES.clear()
    _NAMES[text] = name
    return name


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        if len(value) > _MAX_STRING:
            raise _NotSimple
        if value == "":
            return "''"
        if _typed(value):
            return f"'{value}'"
        if _PLAIN.fullmatch(value) is None:
            raise _NotSimple
        return str(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    raise _NotSimple


def _item(key: Any, value: Any, pad: str, out: list[str]) -> None:
    """One ``key: value`` of a mapping at indentation ``pad``."""
    name = _name(key)
    kind = type(value)
    if kind is dict:
        if not value:
            out.append(f"{pad}{name}: {{}}")
            return
        out.append(f"{pad}{name}:")
        inner = pad + "  "
        for child in _sorted(list(value)):
            _item(child, value[child], inner, out)
    elif kind is list:
        if not value:
            out.append(f"{pad}{name}: []")
            return
        out.append(f"{pad}{name}:")
        _sequence(value, pad + "  ", out)
    elif value is None:
        out.append(f"{pad}{name}:")
    elif isinstance(value, Mapping):
        raise _NotSimple  # a mapping of another type: the reference path copies it first
    else:
        out.append(f"{pad}{name}: {_scalar(value)}")


def _sequence(value: list[Any], pad: str, out: list[str]) -> None:
    """Items at ``pad``, each ``- ``; a mapping item's first line carries the dash."""
    inner = pad + "  "
    for item in value:
        if type(item) is dict and item:
            first = len(out)
            for child in _sorted(list(item)):
                _item(child, item[child], inner, out)
            out[first] = f"{pad}- {out[first][len(inner) :]}"
        else:
            out.append(f"{pad}- {_scalar(item)}")
