"""Metrics add up across processes when PROMETHEUS_MULTIPROC_DIR is set (gunicorn mode)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from shared.metrics import exposition, multiprocess_enabled, wipe_multiprocess_dir

_CHILD = """
from prometheus_client import Counter
c = Counter("demo_things_total", "things", ["kind"])
c.labels(kind="a").inc(3)
"""
_READER = """
import sys
from shared.metrics import exposition, multiprocess_enabled
assert multiprocess_enabled()
sys.stdout.write(exposition().decode())
"""


def _run(code: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_single_process_registry_is_served() -> None:
    assert not multiprocess_enabled()
    assert b"python_info" in exposition() or b"process_" in exposition()


def test_counters_from_two_processes_are_summed(tmp_path: Path) -> None:
    directory = tmp_path / "prom"
    (directory / "stale").mkdir(parents=True)
    wipe_multiprocess_dir(directory)
    assert list(directory.iterdir()) == []
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    _run(_CHILD, env)
    _run(_CHILD, env)
    text = _run(_READER, env)
    assert 'demo_things_total{kind="a"} 6.0' in text


def test_the_directory_is_emptied_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The chart mounts a volume there under a read-only root: the directory itself cannot be
    removed (rmdir fails), only what it holds (stale files and folders of a previous start)."""
    directory = tmp_path / "prom"
    (directory / "stale").mkdir(parents=True)
    (directory / "counter_1.db").write_bytes(b"x")
    (directory / "link").symlink_to(tmp_path)
    real_rmdir = os.rmdir

    def rmdir(path: str | Path, *args: object, **kwargs: object) -> None:
        if Path(path) == directory:
            raise PermissionError(13, "Permission denied", str(path))
        real_rmdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "rmdir", rmdir)
    wipe_multiprocess_dir(directory)
    assert directory.is_dir() and list(directory.iterdir()) == []
    assert tmp_path.exists()
