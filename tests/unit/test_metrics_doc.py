"""docs/metrics.md stays true: it is what scripts/metrics_doc.py writes from the metrics
classes, and it lists the series an operator alerts on.

When this fails after a metric changed, regenerate the page and commit it:
``.venv/bin/python scripts/metrics_doc.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    """``scripts/`` is not a package: load the script as a module by its path."""
    spec = importlib.util.spec_from_file_location("metrics_doc", ROOT / "scripts/metrics_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


doc = _load()


def test_the_page_is_what_the_code_says() -> None:
    current, wanted = doc.regenerate(ROOT)
    stale = sorted(set(wanted.splitlines()) - set(current.splitlines()))
    assert [line[:70] for line in stale] == [], "run .venv/bin/python scripts/metrics_doc.py"
    assert current == wanted, "run .venv/bin/python scripts/metrics_doc.py"


def test_the_page_lists_the_git_target_series_with_their_labels() -> None:
    by_name = {row.name: row for row in doc.rows()}
    for gauge in ("ready", "stalled", "oldest_unpushed_write_seconds"):
        row = by_name[f"gitops_reverser_gittarget_{gauge}"]
        assert (row.kind, row.labels) == ("gauge", ("namespace", "name"))
    applies = by_name["gitops_reverser_gittarget_apply_requests_total"]
    assert (applies.kind, applies.labels) == ("counter", ("namespace", "name", "outcome"))
    assert "gitops_reverser_gittarget_last_push_timestamp_seconds" in by_name


def test_a_new_metric_makes_the_page_stale(tmp_path: Path) -> None:
    """The check compares with the code: a page missing a row (or with an extra) is stale."""
    (tmp_path / "docs").mkdir()
    wanted = doc.render()
    dropped = "\n".join(line for line in wanted.splitlines() if "gittarget_ready" not in line)
    (tmp_path / "docs/metrics.md").write_text(dropped + "\n", encoding="utf-8")
    current, again = doc.regenerate(tmp_path)
    assert current != again and again == wanted
