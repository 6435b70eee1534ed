"""The product's size limits (issue 25): no class over 300 lines, no module over 400.

The product is every Python module under ``shared/`` and ``services/`` (tests, the sandbox and
the benchmarks are not). A class's size runs from its first decorator to its last line; a
module's is its line count. Prints each class and module over its limit, largest first, and
exits 1 if there is one (``tests/unit/test_sizes.py`` keeps the limits in CI).

    .venv/bin/python scripts/sizes.py            # the offenders; exit 1 if any
    .venv/bin/python scripts/sizes.py --top 10   # and the ten largest of each, for a look
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("shared", "services")
MAX_CLASS_LINES = 300
MAX_MODULE_LINES = 400


@dataclass(frozen=True, slots=True)
class Size:
    what: str  # "module" or "class"
    name: str  # path, or path::Class
    lines: int


def measure(root: Path = ROOT, packages: tuple[str, ...] = PRODUCT) -> list[Size]:
    """Every product module's size and every class's (nested classes too), largest first."""
    sizes: list[Size] = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            rel = path.relative_to(root).as_posix()
            sizes.append(Size("module", rel, len(text.splitlines())))
            for node in ast.walk(ast.parse(text, filename=rel)):
                if isinstance(node, ast.ClassDef):
                    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    end = node.end_lineno or node.lineno
                    sizes.append(Size("class", f"{rel}::{node.name}", end - first + 1))
    return sorted(sizes, key=lambda s: s.lines, reverse=True)


def over(sizes: list[Size]) -> list[Size]:
    """The classes over ``MAX_CLASS_LINES`` and the modules over ``MAX_MODULE_LINES``."""
    limit = {"class": MAX_CLASS_LINES, "module": MAX_MODULE_LINES}
    return [s for s in sizes if s.lines > limit[s.what]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=0, help="also list the N largest of each")
    args = parser.parse_args(argv)
    sizes = measure()
    for what in ("class", "module"):
        for size in [s for s in sizes if s.what == what][: args.top]:
            print(f"{what:6} {size.lines:5}  {size.name}")
    offenders = over(sizes)
    for size in offenders:
        limit = MAX_CLASS_LINES if size.what == "class" else MAX_MODULE_LINES
        print(f"over: {size.what} {size.name} has {size.lines} lines (limit {limit})")
    if offenders:
        return 1
    print(f"every class <= {MAX_CLASS_LINES} lines, every module <= {MAX_MODULE_LINES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
