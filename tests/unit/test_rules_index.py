"""docs/rules.md stays true: every rule the code cites has a row, and its file columns match.

When this fails after code or tests moved, regenerate the index and commit it:
``.venv/bin/python scripts/rules_index.py`` (then write any TODO statement it reports).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    """``scripts/`` is not a package: load the script as a module by its path."""
    spec = importlib.util.spec_from_file_location("rules_index", ROOT / "scripts/rules_index.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


index = _load()


def test_the_index_is_what_the_tree_says() -> None:
    current, wanted = index.regenerate(ROOT)
    stale = sorted(set(wanted.splitlines()) - set(current.splitlines()))
    assert [line[:60] for line in stale] == [], "run .venv/bin/python scripts/rules_index.py"
    assert current == wanted, "run .venv/bin/python scripts/rules_index.py"


def test_every_cited_rule_has_a_written_statement() -> None:
    said = index.statements((ROOT / index.INDEX).read_text(encoding="utf-8"))
    cited = index.scan(ROOT).ids()
    assert sorted(cited - set(said), key=index.sort_key) == []
    unwritten = [rule for rule, text in said.items() if not text or text == index.MISSING]
    assert unwritten == []


def test_every_exclusion_is_still_needed() -> None:
    """An entry of NOT_RULES whose file no longer names the id would hide a future citation."""
    for path, rule in index.NOT_RULES:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert re.search(rf"\b{rule}\b", text), f"drop ({path}, {rule}) from NOT_RULES"


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("D3: the tip must not have moved", {"D3"}),
        ("outcomes in, requests out (A1-A5)", {"A1", "A2", "A3", "A4", "A5"}),
        ("M1-M2, M9", {"M1", "M2", "M9"}),
        ("from M10 to O6: M1 ... O6", {"M10", "O6", "M1"}),
        ("see appliers.md A1 and F2 (S2 reads them)", set()),
        ("Flux (facts F2). D4 decides it; the rest A1", {"D4", "A1"}),
        ("T0 = now, a1, XA1, A1x, M0", set()),
    ],
)
def test_what_counts_as_a_citation(text: str, cited: set[str]) -> None:
    assert index.cited_in_text(text) == cited


def test_only_comments_and_strings_cite(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text('Q4 = 1  # Q5 holds\nS1 = "S2"\n', encoding="utf-8")
    assert index.cited_in_file(source) == {"Q5", "S2"}


def test_rules_are_ordered_as_the_spec_orders_them() -> None:
    rules = ["O6", "M10", "A1", "M2", "Q7", "R1"]
    assert sorted(rules, key=index.sort_key) == ["M2", "M10", "R1", "Q7", "A1", "O6"]
