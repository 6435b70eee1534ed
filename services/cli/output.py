"""Printing records as kubectl does: a table by default, ``-o json`` or ``-o yaml``.

A command builds plain records (dicts of str, numbers, lists, None); the table shows the
columns a person scans, json and yaml show every field, so a script reads the same facts the
person sees and more.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import yaml

FORMATS = ("table", "json", "yaml")
Record = dict[str, Any]


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def table(rows: Sequence[Record], columns: Mapping[str, str], out: TextIO) -> None:
    """A kubectl-style table: upper-case headers, columns padded by three spaces."""
    cells = [[_cell(row.get(key)) for key in columns] for row in rows]
    headers = list(columns.values())
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    for line in [headers, *cells]:
        out.write("   ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n")


def emit(
    data: Any,
    fmt: str,
    columns: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    text: str | None = None,
) -> None:
    """``data`` as ``fmt``; ``table`` prints ``text`` if given, else ``data`` (a list of
    records, or ``{"items": [...]}``) under ``columns``."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    elif fmt == "yaml":
        out.write(yaml.safe_dump(data, sort_keys=True, default_flow_style=False))
    elif text is not None:
        out.write(text if text.endswith("\n") else text + "\n")
    else:
        rows = data["items"] if isinstance(data, dict) else data
        if not rows:
            sys.stderr.write("No resources found.\n")
            return
        table(rows, columns or {}, out)
