"""Regenerate (or check) docs/rules.md: each behaviour rule, what it asks, and who cites it.

The code and the tests name the rules of ``../shared/spec/behaviour.md`` by id (``Q4``,
``D2``) in comments and docstrings. The index keeps one row per rule: a statement a person
wrote, and two columns this script derives from the tree (the product files and the test
files that cite the rule), so the citations resolve inside the repository and the columns
cannot go stale unnoticed (``tests/unit/test_rules_index.py`` fails when they differ).

    .venv/bin/python scripts/rules_index.py           # rewrite docs/rules.md from the tree
    .venv/bin/python scripts/rules_index.py --check   # exit 1 when docs/rules.md is stale

Only comments and string literals count as citations (a variable named ``T1`` is none). A range
``A1-A5`` cites every rule in it. An id later in a sentence that mentions the facts files
(``appliers.md A1``, ``facts F2``) is a fact's id, not a rule's, and is left out.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tokenize
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDEX = Path("docs/rules.md")
#: Where the product's citations are looked for, and where the tests' are.
CODE_DIRS = ("services", "shared")
TEST_DIRS = ("tests",)
#: The spec's sections in its own order; an id is a section letter and the rule's number.
SECTIONS = "MRQASDWOTP"
_ID = rf"[{SECTIONS}](?:[1-9][0-9]?)"
_CITATION = re.compile(rf"\b({_ID})(?:\s*-\s*({_ID}))?\b")
#: Where a sentence starts naming facts (``../shared/facts/``), whose ids are not rules.
_FACTS = re.compile(r"facts|appliers\.md|webhooks-git-libs\.md|upstream-gitops-reverser\.md")
_SENTENCE_END = re.compile(r"[.;]\s|\n\s*\n")
#: Files whose ids are examples, not citations: the index's own test.
UNSCANNED = frozenset({"tests/unit/test_rules_index.py"})
#: Fact ids that look like rule ids and stand without a facts reference in their sentence
#: (``appliers.md`` A1 is Argo CD's Application; behaviour A1 is what an applier is owed). A
#: citation written as ``appliers.md A1`` needs no entry; the test fails on an entry no longer
#: needed.
NOT_RULES: Mapping[tuple[str, str], str] = {}
#: The statement a row gets when a rule is cited but nobody has written what it asks.
MISSING = "TODO: say what this rule asks"
_HEADER = """\
# Behaviour rules: what each asks, and where it lives

The code, the tests and the docs name the rules of `../shared/spec/behaviour.md` by id: M mirror,
R receiver, Q branch, A applier, S GitTarget, D dispatcher, W apply window, O operating,
T tenancy, P parity. Each row says in a line what the rule asks (the spec has the full text),
then which product files and which test files cite it in a comment or docstring.

The statements are written by hand; the two file columns are generated from the tree. After
code or tests move, regenerate them (a row whose rule is newly cited gets a TODO statement to
fill in); `tests/unit/test_rules_index.py` fails while the file is out of date:

    .venv/bin/python scripts/rules_index.py           # rewrite this file
    .venv/bin/python scripts/rules_index.py --check   # only report whether it is current

"—" means no file cites the rule: for a product file, the rule is not built yet (or its code
does not say so); for a test, nothing names it as what it proves.

"""
_TABLE_HEAD = "| id | what the rule asks | product files | tests |\n|---|---|---|---|\n"
_ROW = re.compile(rf"^\|\s*({_ID})\s*\|(.*?)(?<!\\)\|")


@dataclass(frozen=True, slots=True)
class Citations:
    """The files that cite each rule id, split into product files and test files."""

    code: Mapping[str, frozenset[str]]
    tests: Mapping[str, frozenset[str]]

    def ids(self) -> set[str]:
        """Every id cited anywhere."""
        return set(self.code) | set(self.tests)


def sort_key(rule: str) -> tuple[int, int]:
    """The spec's order: by section, then by number (M2 before M10)."""
    return SECTIONS.index(rule[0]), int(rule[1:])


def _expand(first: str, last: str | None) -> Iterator[str]:
    """``A1`` alone, or each id of a range ``A1-A5`` (a range across sections is two ids)."""
    if last is None:
        yield first
    elif last[0] != first[0] or int(last[1:]) <= int(first[1:]):
        yield from (first, last)
    else:
        yield from (f"{first[0]}{n}" for n in range(int(first[1:]), int(last[1:]) + 1))


def cited_in_text(text: str) -> set[str]:
    """The rule ids one comment or string cites (fact ids after a facts reference excluded)."""
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        facts = _FACTS.search(sentence)
        head = sentence[: facts.start()] if facts else sentence
        for match in _CITATION.finditer(head):
            found.update(_expand(match.group(1), match.group(2)))
    return found


def _prose(source: str) -> Iterator[str]:
    """The comments and string literals of a Python file."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.string


def cited_in_file(path: Path) -> set[str]:
    """The rule ids a Python file cites in its comments and strings."""
    found: set[str] = set()
    for text in _prose(path.read_text(encoding="utf-8")):
        found |= cited_in_text(text)
    return found


def _scan(root: Path, dirs: Iterable[str]) -> dict[str, frozenset[str]]:
    by_id: dict[str, set[str]] = defaultdict(set)
    for top in dirs:
        for path in sorted((root / top).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            if name in UNSCANNED:
                continue
            for rule in cited_in_file(path):
                if (name, rule) not in NOT_RULES:
                    by_id[rule].add(name)
    return {rule: frozenset(files) for rule, files in by_id.items()}


def scan(root: Path = ROOT) -> Citations:
    """Who cites what, as the tree under ``root`` says today."""
    return Citations(_scan(root, CODE_DIRS), _scan(root, TEST_DIRS))


def statements(index_text: str) -> dict[str, str]:
    """The hand-written statement of each row of an existing index."""
    found: dict[str, str] = {}
    for line in index_text.splitlines():
        match = _ROW.match(line)
        if match:
            found[match.group(1)] = match.group(2).strip()
    return found


def _files(paths: Iterable[str]) -> str:
    listed = ", ".join(f"`{p}`" for p in sorted(paths))
    return listed or "—"


def render(said: Mapping[str, str], cited: Citations) -> str:
    """The whole index: every rule with a statement or a citation, in the spec's order."""
    rows = []
    for rule in sorted(set(said) | cited.ids(), key=sort_key):
        statement = said.get(rule) or MISSING
        code = _files(cited.code.get(rule, ()))
        tests = _files(cited.tests.get(rule, ()))
        rows.append(f"| {rule} | {statement} | {code} | {tests} |\n")
    return _HEADER + _TABLE_HEAD + "".join(rows)


def regenerate(root: Path = ROOT) -> tuple[str, str]:
    """The index as it is on disk and as the tree says it should be."""
    path = root / INDEX
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    return current, render(statements(current), scan(root))


def main(argv: list[str] | None = None) -> int:
    """Rewrite the index, or with ``--check`` only say whether it is current."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the index is stale")
    args = parser.parse_args(argv)
    current, wanted = regenerate()
    if args.check:
        if current != wanted:
            print(f"{INDEX} is out of date: run .venv/bin/python scripts/rules_index.py")
            return 1
        return 0
    (ROOT / INDEX).write_text(wanted, encoding="utf-8")
    missing = [r for r, s in statements(wanted).items() if s == MISSING]
    if missing:
        print(f"{INDEX}: write the statement of {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
