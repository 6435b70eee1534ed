"""Every process setting is read by the product (a parsed, documented setting that nothing reads
is a promise the code does not keep: ``GITOPS_REVERSER_MAX_WINDOW`` was one)."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

from shared.settings import Settings

ROOT = Path(__file__).resolve().parents[3]
SETTINGS_MODULE = ROOT / "shared" / "settings.py"


def _product_sources() -> str:
    files = [*(ROOT / "services").rglob("*.py"), *(ROOT / "shared").rglob("*.py")]
    return "\n".join(f.read_text() for f in sorted(files) if f != SETTINGS_MODULE)


SOURCES = _product_sources()


@pytest.mark.parametrize("name", [f.name for f in fields(Settings)])
def test_the_setting_is_read_outside_the_settings_module(name: str) -> None:
    # read from a Settings object (``settings.x``, ``self._settings.x``,
    # ``Settings.from_env().x``): a bare ``.x`` would be met by any attribute of that name
    # (``.namespace`` is read 145 times in the product, the setting 3 times)
    read = rf"settings\.{name}\b|Settings\.from_env\(\)\.{name}\b"
    assert re.search(read, SOURCES), f"Settings.{name} is parsed but never read"
