"""Regenerate (or check) the values table of docs/install.md from the chart's values.yaml.

Every key of ``charts/gitops-reverser/values.yaml`` that a ``# --`` comment describes is one
row: its dotted path, its default (as YAML flow text) and the comment. A key without such a
comment is a group whose keys are described one by one. The table sits between two markers in
docs/install.md, so the prose around it is written by hand and the table never drifts
(``tests/integration/chart/test_install_doc.py`` fails when it differs).

    .venv/bin/python scripts/values_table.py           # rewrite the table
    .venv/bin/python scripts/values_table.py --check   # exit 1 when it is stale
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
VALUES = ROOT / "charts" / "gitops-reverser" / "values.yaml"
DOC = ROOT / "docs" / "install.md"
START, END = "<!-- values-table:start -->", "<!-- values-table:end -->"
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z][A-Za-z0-9]*):(?P<rest>.*)$")


@dataclass(frozen=True, slots=True)
class Row:
    path: str
    default: Any
    description: str


def described_keys(text: str) -> dict[str, str]:
    """Dotted path -> description, for every key with a ``# --`` comment right above it."""
    found: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    comment: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            comment = [stripped[4:].strip()]
            continue
        if stripped.startswith("#") and comment:
            comment.append(stripped[1:].strip())
            continue
        match = _KEY.match(line)
        if match is None:
            comment = []
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        if comment:
            found[".".join(key for _, key in stack)] = " ".join(comment)
        comment = []
    return found


def rows(text: str) -> list[Row]:
    """The table's rows in the order of values.yaml; a key no comment describes and that has
    no described keys under it is an error (it would be undocumented)."""
    values = yaml.safe_load(text)
    described = described_keys(text)
    found: list[Row] = []

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for key, value in node.items():
            path = f"{prefix}{key}"
            if path in described:
                found.append(Row(path, value, described[path]))
            elif isinstance(value, dict) and value:
                walk(f"{path}.", value)
            else:
                raise SystemExit(f"values.yaml: {path} has no '# --' description")

    walk("", values)
    return found


def table(text: str) -> str:
    lines = ["| key | default | description |", "|---|---|---|"]
    for row in rows(text):
        default = json.dumps(row.default, ensure_ascii=False, separators=(", ", ": "))
        text = row.description.replace("|", "\\|")
        lines.append(f"| `{row.path}` | `{default}` | {text} |")
    return "\n".join(lines)


def updated(doc: str, values_text: str) -> str:
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{table(values_text)}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table is stale")
    args = parser.parse_args()
    doc = DOC.read_text()
    fresh = updated(doc, VALUES.read_text())
    if args.check:
        if fresh != doc:
            print(f"{DOC.relative_to(ROOT)}: the values table is stale; run {__file__}")
            return 1
        return 0
    DOC.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
