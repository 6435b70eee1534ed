"""docs/crds.md "When its branch cannot push" (T4) states what the code does: its reasons are
the ones the branch worker records, and its figures are the code's constants."""

from __future__ import annotations

import re
from pathlib import Path

from services.branch_worker.jobs import BRANCH_STALLED, PUSH_FAILING
from services.branch_worker.orphans import GRACE_S
from services.branch_worker.pushing import MAX_PUSH_ATTEMPTS
from shared.settings import Settings
from shared.store.branch_health import MESSAGE_CHARS

DOCS = Path(__file__).resolve().parents[3] / "docs"


def _section() -> str:
    text = (DOCS / "crds.md").read_text()
    start = text.index("### When its branch cannot push")
    return text[start : text.index("\n## ", start)]


def test_the_reasons_documented_are_those_recorded() -> None:
    rows = re.findall(r"^\| `(\w+)` \|", _section(), flags=re.MULTILINE)
    assert sorted(rows) == sorted([PUSH_FAILING, BRANCH_STALLED])


def test_the_figures_documented_are_the_code_s() -> None:
    section = " ".join(_section().split())
    period = Settings().reconcile_period.total_seconds()
    assert f"every {period:g} s by default" in section
    assert f"every one of its {MAX_PUSH_ATTEMPTS} pushes" in section
    assert f"cut to {MESSAGE_CHARS} characters" in section
    assert f"a grace of {GRACE_S:g} s" in section


def test_each_troubleshooting_table_points_at_the_section() -> None:
    for guide in ("flux.md", "argocd.md"):
        table = (DOCS / guide).read_text().split("## Troubleshooting", 1)[1]
        row = next(line for line in table.splitlines() if PUSH_FAILING in line)
        assert BRANCH_STALLED in row and "crds.md#when-its-branch-cannot-push" in row, guide
