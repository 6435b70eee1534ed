"""docs/install.md's values table is the one values.yaml gives (O4): a key added, removed or
redescribed without running ``scripts/values_table.py`` fails here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from sandbox.paths import REPO_ROOT


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "values_table", REPO_ROOT / "scripts" / "values_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_table_is_in_step_with_values_yaml() -> None:
    """O4: the doc holds exactly the generated table."""
    script = _script()
    doc = Path(script.DOC).read_text()
    assert script.updated(doc, Path(script.VALUES).read_text()) == doc


def test_every_value_is_a_row() -> None:
    """Each leaf of values.yaml (or a described block) has a row, with its default."""
    script = _script()
    text = Path(script.VALUES).read_text()
    rows = {row.path: row for row in script.rows(text)}
    values = yaml.safe_load(text)
    assert rows["receiver.ingress.host"].default == ""
    assert rows["redis.builtin"].default is True
    assert set(values) <= {path.split(".")[0] for path in rows}


def test_an_undescribed_key_is_refused() -> None:
    """The generator cannot leave a key out silently."""
    with pytest.raises(SystemExit, match="newKey"):
        _script().rows("# -- described\nold: 1\nnewKey: 2\n")
