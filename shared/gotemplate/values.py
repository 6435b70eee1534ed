"""What a template's data is made of (plain Python standing for Go values) and what a template
says when it fails: ``TemplateError``. ``Shape`` describes data without holding any, for the
static field check (``checks``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


class TemplateError(ValueError):
    """A template that does not parse, names what the data lacks, or fails while running."""


class GoMap(dict[str, object]):
    """A Go map: ranged in sorted key order; ``zero`` is what ``index`` gives for a key it
    lacks, and a field in ``zero_keys`` reads as ``zero`` when absent (not an error)."""

    zero: object = None
    zero_keys: frozenset[str] = frozenset()


class Record(dict[str, object]):
    """A Go struct: a field it lacks is always an error; printed ``{v1 v2 ...}``."""

    type_name: str = "struct"


@dataclass(frozen=True)
class Shape:
    """What a value is: ``kind`` one of any, string, int, bool, list, map, record."""

    kind: str
    fields: Mapping[str, Shape] = field(default_factory=dict)  # a record's fields
    elem: Shape | None = None  # a list's element, a map's value
    keys: frozenset[str] = frozenset()  # a map's keys that may be read as fields
    name: str = ""


ANY = Shape("any")
STRING, INT, BOOL = Shape("string"), Shape("int"), Shape("bool")
